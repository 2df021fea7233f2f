"""Things that cost GPU time on every step and help nobody once the code works: DataParallel's
single-process scatter and gather, anomaly detection and the autograd profiler left on (003,
"code tweaks to think about")."""

import ast
from collections.abc import Iterator

from guidance.engine.code_check import frameworks
from guidance.engine.code_check.context import Project, make
from guidance.engine.code_check.findings import CodeFinding, Kind
from guidance.engine.code_check.program import Program
from guidance.engine.code_check.snippets import (
    Edit,
    Snippet,
    apply,
    set_keywords,
    statement_lines,
)
from guidance.engine.code_check.values import Value, Values

DATA_PARALLEL = (
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
)
SET_DETECT_ANOMALY = (
    "torch.autograd.set_detect_anomaly",
    "torch.autograd.anomaly_mode.set_detect_anomaly",
)
DETECT_ANOMALY = ("torch.autograd.detect_anomaly", "torch.autograd.anomaly_mode.detect_anomaly")
PROFILERS = ("torch.autograd.profiler.profile", "torch.autograd.profile")
EMIT_NVTX = ("torch.autograd.profiler.emit_nvtx",)

_DDP_FIX = (
    "Start one process per GPU with torchrun, call torch.distributed.init_process_group("
    '"nccl") and wrap the model in DistributedDataParallel with device_ids=[local_rank]; give '
    "each loader a DistributedSampler."
)


def check_data_parallel(
    project: Project, program: Program, values: Values
) -> Iterator[CodeFinding]:
    for call in program.calls_named(*DATA_PARALLEL):
        func = program.segment(call.func)
        replacement = func[: -len("DataParallel")] + "parallel.DistributedDataParallel"
        if func.endswith("parallel.DataParallel"):
            replacement = func[: -len("DataParallel")] + "DistributedDataParallel"
        start, end = program.start(call.func), program.end(call.func)
        edits = [Edit(start, end, replacement)]
        if len(call.args) > 1:
            # device_ids given by position (output_device and dim may follow): the keyword
            # takes its place, and positional arguments cannot follow a keyword.
            start = program.end(call.args[0])
            edits.append(Edit(start, program.end(call.args[-1]), ", device_ids=[local_rank]"))
        elif call.args and not any(k.arg == "device_ids" for k in call.keywords):
            position = program.end(call.args[0])
            edits.append(Edit(position, position, ", device_ids=[local_rank]"))
        first, last = statement_lines(program, call)
        yield make(
            "data_parallel",
            Kind.CHANGE,
            program,
            call,
            f"`{func}` drives all the GPUs from one Python process: every step it copies the "
            "model to each GPU and gathers the outputs back on the first, so the GPUs wait on "
            "that one process and the first GPU. PyTorch itself recommends "
            "DistributedDataParallel, one process per GPU, which scales much better.",
            _DDP_FIX,
            apply(program, first, last, edits),
        )
    for site in project.frameworks.lightning:
        # A Trainer built from a YAML config is read once, with the entry file.
        if site.program is not program and not (site.config and program is project.entry):
            continue
        strategy = frameworks.argument(values, site, "strategy")
        if strategy is not None and strategy.known and strategy.value in ("dp", "ddp2"):
            yield make(
                "data_parallel",
                Kind.CHANGE,
                getattr(strategy, "file", None) or program,
                strategy.node,
                f'strategy="{strategy.value}" runs the GPUs as DataParallel does, from one '
                "process: the GPUs wait on it every step. DistributedDataParallel, one process "
                "per GPU, scales much better.",
                "Use strategy: ddp in the Trainer's config."
                if site.config
                else 'Use strategy="ddp".',
                frameworks.settings_fix(values, site, {"strategy": '"ddp"'}),
            )


def check_debug_apis(project: Project, program: Program, values: Values) -> Iterator[CodeFinding]:
    for call in program.calls_named(*SET_DETECT_ANOMALY):
        mode = values.argument(call, "mode", 0)
        if mode is None or (mode.known and not mode.value):
            continue
        if not mode.known:
            yield _question(program, call, "anomaly detection", mode.text)
            continue
        yield make(
            "debug_apis",
            Kind.CHANGE,
            program,
            call,
            f"`{program.segment(call)}` checks every backward pass for NaNs and keeps a trace of "
            "every operation: a debugging aid that slows each step a lot.",
            "Turn anomaly detection off once the model trains without errors.",
            _replace(program, call, mode, "False"),
        )
    for call in program.calls_named(*DETECT_ANOMALY):
        func = program.segment(call.func)
        yield make(
            "debug_apis",
            Kind.CHANGE,
            program,
            call,
            f"`{func}()` checks every backward pass for NaNs and keeps a trace of every "
            "operation: a debugging aid that slows each step a lot.",
            "Remove it once the model trains without errors (or turn it off with "
            "set_detect_anomaly(False)).",
            _replace_node(
                program,
                call,
                call,
                func.replace("detect_anomaly", "set_detect_anomaly") + "(False)",
            ),
        )
    for call in program.calls_named(*PROFILERS, *EMIT_NVTX):
        enabled = values.argument(call, "enabled", 0)
        if enabled is not None and enabled.known and not enabled.value:
            continue
        if enabled is not None and not enabled.known:
            yield _question(program, call, "the profiler", enabled.text)
            continue
        func = program.segment(call.func)
        nvtx = program.qualname(call.func) in EMIT_NVTX
        what = "NVTX ranges for every operation" if nvtx else "a record of every operation"
        yield make(
            "debug_apis",
            Kind.CHANGE,
            program,
            call,
            f"`{func}(...)` makes {what} on every step: useful while profiling, a cost on "
            "every step otherwise.",
            "Pass enabled=False (or remove it) when you are not profiling.",
            set_keywords(program, call, {"enabled": "False"})
            if enabled is None
            else _replace(program, call, enabled, "False"),
        )


def _replace(program: Program, call: ast.Call, given: Value, text: str) -> Snippet:
    """The argument's value replaced; no mechanical after where it comes from a `**kw`."""
    node = given.node.value if isinstance(given.node, ast.keyword) else given.node
    snippet = _replace_node(program, call, node, text)
    return snippet.without_after() if given.spread else snippet


def _replace_node(program: Program, call: ast.Call, node: ast.AST, text: str) -> Snippet:
    first, last = statement_lines(program, call)
    return apply(program, first, last, [Edit(program.start(node), program.end(node), text)])


def _question(program: Program, call: ast.Call, what: str, text: str) -> CodeFinding:
    return make(
        "debug_apis",
        Kind.QUESTION,
        program,
        call,
        f"Whether {what} is on comes from `{text}`: make sure it is off on the cluster unless "
        "you are debugging; it slows every step.",
        "Pass False for real training runs.",
    )
