"""Feeding the GPU: the DataLoader's workers, pinned memory, persistent workers, prefetching and
batch size (003, "Make the most of the pytorch dataloader"), on torch's DataLoader however it is
imported, and on Hugging Face's TrainingArguments in their own names."""

import ast
from collections.abc import Iterator
from functools import cached_property

from guidance.engine.code_check.configs import is_config, replace_scalar
from guidance.engine.code_check.context import Project, make
from guidance.engine.code_check.findings import CodeFinding, Kind
from guidance.engine.code_check.program import Program
from guidance.engine.code_check.snippets import (
    Snippet,
    replace_values,
    set_arguments,
    set_keywords,
    short_call,
)
from guidance.engine.code_check.stated import How, Stated, Statements
from guidance.engine.code_check.values import Value, Values

DATALOADERS = ("torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader")
# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn,
# pin_memory, ...): where its arguments sit when given by position.
POSITIONS = {"batch_size": 1, "num_workers": 5, "pin_memory": 7}
PREFETCH = 4  # the document's example loader


def dataloaders(program: Program) -> list[ast.Call]:
    return program.calls_named(*DATALOADERS)


class Loader:
    """One DataLoader call's loading arguments, as far as the code fixes them."""

    def __init__(self, program: Program, values: Values, call: ast.Call):
        self.program, self.call = program, call
        self.workers = values.argument(call, "num_workers", POSITIONS["num_workers"])
        self.pin_memory = values.argument(call, "pin_memory", POSITIONS["pin_memory"])
        self.persistent = values.argument(call, "persistent_workers")
        self.prefetch = values.argument(call, "prefetch_factor")
        self.batch_size = values.argument(call, "batch_size", POSITIONS["batch_size"])

    @cached_property
    def name(self) -> str:
        """How a finding names the loader: made only for a loader that gets one."""
        return short_call(self.program, self.call)

    @property
    def without_workers(self) -> bool:
        return _no_workers(self.workers)

    @property
    def workers_as_text(self) -> bool:
        """num_workers="4": a string, which the DataLoader refuses when it starts."""
        return bool(self.workers and self.workers.known and isinstance(self.workers.value, str))

    @property
    def with_workers(self) -> bool:
        """num_workers is known and more than 0."""
        return bool(self.workers and self.workers.known and (_number(self.workers.value) or 0) > 0)

    def fix(self, changes: dict[str, str]) -> Snippet:
        """The call with these arguments set; no mechanical after where one comes from a
        `**kw` (the dict is elsewhere: the fix says it in words)."""
        given = [self._given(name) for name in changes]
        snippet = set_arguments(self.program, self.call, changes, POSITIONS)
        if any(value is not None and value.spread for value in given):
            return snippet.without_after()
        return snippet

    def _given(self, name: str) -> Value | None:
        return {
            "num_workers": self.workers,
            "pin_memory": self.pin_memory,
            "persistent_workers": self.persistent,
            "prefetch_factor": self.prefetch,
            "batch_size": self.batch_size,
        }.get(name)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def _no_workers(value: Value | None) -> bool:
    """Missing, or known to load in the main process: 0, and False, None or a negative
    number, which the DataLoader takes as 0 or refuses."""
    if value is None:
        return True
    if not value.known:
        return False
    number = _number(value.value)
    return value.value in (None, False) or (number is not None and number <= 0)


def _is_false(value: Value | None) -> bool:
    """Missing, or known to be falsy (False, 0, None)."""
    return value is None or (value.known and not value.value)


def _cpus(project: Project) -> str:
    return f"{project.cpus} CPUs per GPU here"


def _loaders(project: Project, program: Program, values: Values) -> list[Loader]:
    """The file's DataLoader calls with their arguments, read once for the four rules."""
    key = ("loaders", program.name)
    if key not in project.memo:
        project.memo[key] = [Loader(program, values, call) for call in dataloaders(program)]
    return project.memo[key]  # type: ignore[return-value]


def check_num_workers(project: Project, program: Program, values: Values) -> Iterator[CodeFinding]:
    for loader in _loaders(project, program, values):
        call = loader.call
        if loader.without_workers:
            changes = {"num_workers": str(project.cpus)}
            if loader.pin_memory is None or not loader.pin_memory.value:
                changes["pin_memory"] = "True"
            if loader.persistent is None or not loader.persistent.value:
                changes["persistent_workers"] = "True"
            if not _prefetch_enough(loader.prefetch):
                changes["prefetch_factor"] = str(PREFETCH)
            how = (
                "without num_workers"
                if loader.workers is None
                else f"with num_workers={loader.workers.text}"
            )
            yield make(
                "dataloader_num_workers",
                Kind.CHANGE,
                program,
                call,
                f"`{loader.name}` is built {how}: it loads every batch in the training process "
                "itself, and the GPU waits idle while the CPU reads and prepares the next one. "
                "Worker processes prepare batches in parallel while the GPU computes.",
                f"Give it num_workers={project.cpus} (one worker per CPU the job has per GPU), "
                f"with pinned memory, persistent workers and prefetch_factor={PREFETCH}, as the "
                "guidelines' example loader does.",
                loader.fix(changes),
            )
        elif loader.workers_as_text:
            text = str(loader.workers.value).strip()
            number = text if text.isdigit() and int(text) > 0 else str(project.cpus)
            yield make(
                "dataloader_num_workers",
                Kind.CHANGE,
                program,
                call,
                f"num_workers is the string `{loader.workers.text}`: the DataLoader needs an "
                "int and stops with an error when it starts loading.",
                f"Pass the number itself: num_workers={number}.",
                loader.fix({"num_workers": number}),
            )
        elif not loader.workers.known:
            stated = _stated(project, program, loader.workers)
            if stated is not None:
                yield from _stated_findings(project, stated, "num_workers", loader.name)
                continue
            yield make(
                "dataloader_num_workers",
                Kind.QUESTION,
                program,
                call,
                f"num_workers {_comes_from(loader.workers)}: make sure it is more than 0 on the "
                f"cluster ({_cpus(project)}). With 0 the GPU waits while the training process "
                "loads each batch itself.",
                f"Pass {project.cpus} (the CPUs the job has per GPU) when you run it on the "
                "cluster.",
            )


def _stated(project: Project, program: Program, value: Value | None) -> Stated | None:
    """Where an unknown worker count is said without a literal: from the job, or a default
    written elsewhere; None where the files do not say it."""
    if value is None or value.known or value.spread:
        return None
    if "statements" not in project.memo:
        project.memo["statements"] = Statements(project.programs, project.values, project.hydra)
    statements: Statements = project.memo["statements"]  # type: ignore[assignment]
    expr = value.node.value if isinstance(value.node, ast.keyword) else value.node
    return statements.of(program, expr)


def _stated_findings(
    project: Project, stated: Stated, name: str, loader: str
) -> Iterator[CodeFinding]:
    """Read from the job, or a default above 0: nothing to say. An environment variable as
    read (a string) or a default of 0: the change, where it is written."""
    program, node = stated.program, stated.node
    if stated.how is How.TEXT:
        read = program.segment(node)
        number = read
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
            # .get(name) is None where the variable is unset: int() needs a fallback.
            number = (
                f"{program.segment(node.func)}({program.segment(node.args[0])}, {project.cpus})"
            )
        after = f"int({number})"
        yield make(
            "dataloader_num_workers",
            Kind.CHANGE,
            program,
            node,
            f"`{loader}` takes {name} from `{read}`: an environment variable is read as a "
            "string, and the DataLoader stops with a TypeError when it compares it with 0.",
            f"Make it a number: {name}={after}.",
            replace_values(program, {name: node}, {name: after}),
        )
    elif (
        stated.how is How.DEFAULT and (_number(stated.value) or 0) <= 0 and is_config(program.name)
    ):
        yield make(
            "dataloader_num_workers",
            Kind.CHANGE,
            program,
            node,
            f"`{loader}` takes {name} from {stated.where}, which is {stated.value}: Hydra "
            "builds it with that value, so unless the run overrides it every batch is loaded "
            "in the training process itself, and the GPU waits while the CPU prepares the next.",
            f"Make it {project.cpus} there (one worker per CPU the job has per GPU), or give "
            f"the job's own count on the command line: {stated.key}=$SLURM_CPUS_PER_TASK.",
            replace_scalar(program, node, str(project.cpus)),
        )
    elif stated.how is How.DEFAULT and (_number(stated.value) or 0) <= 0:
        written = program.segment(node)
        text = f"default={project.cpus}" if isinstance(node, ast.keyword) else str(project.cpus)
        shown = f" (`{written}`)" if written != str(stated.value) else ""
        yield make(
            "dataloader_num_workers",
            Kind.CHANGE,
            program,
            node,
            f"`{loader}` takes {name} from {stated.where}, which is {stated.value}{shown}: "
            "unless the run says otherwise, it loads every batch in the training process "
            "itself, and the GPU waits while the CPU prepares the next one.",
            f"Make it {project.cpus} (one worker per CPU the job has per GPU), or read the "
            "job's own count: int(os.environ['SLURM_CPUS_PER_TASK']).",
            replace_values(program, {name: node}, {name: text}),
        )


def _comes_from(value: Value) -> str:
    if value.spread:
        return f"may come from `{value.text}`, which the code does not fix"
    return f"comes from `{value.text}`"


def _prefetch_enough(value: Value | None) -> bool:
    number = _number(value.value) if value is not None and value.known else None
    return number is not None and number > 2


def check_pin_memory(project: Project, program: Program, values: Values) -> Iterator[CodeFinding]:
    for loader in _loaders(project, program, values):
        call = loader.call
        pin = loader.pin_memory
        if _is_false(pin):
            yield make(
                "dataloader_pin_memory",
                Kind.CHANGE,
                program,
                call,
                f"`{loader.name}` does not pin its batches in memory: each copy to the GPU first "
                "goes through an extra staging copy, and cannot overlap with the GPU's work.",
                "Set pin_memory=True: batches are put in page-locked memory, from which they "
                "reach the GPU faster (and asynchronously with `.to(device, non_blocking=True)`).",
                loader.fix({"pin_memory": "True"}),
            )
        elif not pin.known:
            yield make(
                "dataloader_pin_memory",
                Kind.QUESTION,
                program,
                call,
                f"pin_memory {_comes_from(pin)}: make sure it is True when the program runs on "
                "the GPU, so that batches reach it without an extra copy.",
                "Pass True on the cluster.",
            )


def check_persistent_workers(
    project: Project, program: Program, values: Values
) -> Iterator[CodeFinding]:
    for loader in _loaders(project, program, values):
        call = loader.call
        if loader.without_workers:
            continue  # the num_workers fix sets it too
        explicit_off = loader.persistent is not None and loader.persistent.known
        explicit_off = explicit_off and not loader.persistent.value
        if (loader.with_workers and _is_false(loader.persistent)) or explicit_off:
            yield make(
                "dataloader_persistent_workers",
                Kind.CHANGE,
                program,
                call,
                f"`{loader.name}` stops its worker processes after every epoch and starts new "
                "ones for the next: each epoch begins with the GPU waiting for them.",
                "Set persistent_workers=True to keep the workers between epochs.",
                loader.fix({"persistent_workers": "True"}),
            )


def check_prefetch_factor(
    project: Project, program: Program, values: Values
) -> Iterator[CodeFinding]:
    for loader in _loaders(project, program, values):
        call = loader.call
        if not loader.with_workers:
            continue
        prefetch = loader.prefetch
        if prefetch is None or (prefetch.known and not _prefetch_enough(prefetch)):
            now = "the default of 2" if prefetch is None else f"prefetch_factor={prefetch.text}"
            yield make(
                "dataloader_prefetch_factor",
                Kind.CHANGE,
                program,
                call,
                f"`{loader.name}` keeps {now} batches ready per worker: a slow batch leaves "
                "the GPU waiting sooner than with a deeper queue.",
                f"Raise prefetch_factor to {PREFETCH}.",
                loader.fix({"prefetch_factor": str(PREFETCH)}),
            )


def check_batch_size(project: Project, program: Program, values: Values) -> Iterator[CodeFinding]:
    measured = project.measured
    if measured is None or not measured.peak_memory_gb or not measured.memory_total_gb:
        return
    if measured.peak_memory_gb >= measured.memory_total_gb / 2:
        return
    sites = [(loader.call, loader.batch_size) for loader in _loaders(project, program, values)]
    sites += [
        (s.call, values.argument(s.call, "per_device_train_batch_size"))
        for s in _hf(project, program)
    ]
    for call, size in sites:
        number = _number(size.value) if size is not None and size.known else None
        if not number or number < 1:
            continue
        name = (
            size.node.arg if isinstance(size.node, ast.keyword) and size.node.arg else "batch_size"
        )
        doubled = str(int(number) * 2)
        snippet = None
        literal = isinstance(size.node, ast.keyword) and isinstance(size.node.value, ast.Constant)
        if literal and not size.spread:
            snippet = set_keywords(program, call, {name: doubled})
        yield make(
            "batch_size",
            Kind.CHANGE,
            program,
            size.node,
            f"{name}={size.text} left the GPU's memory more than half empty: the job used at "
            f"most {measured.peak_memory_gb:.1f} GB of {measured.memory_total_gb:.0f} GB. A "
            "larger batch gives the GPU more work per step and fewer waits for data.",
            f"Raise {name} (try {doubled}) until memory is nearly full, and adjust the "
            "learning rate if your training depends on it.",
            snippet,
        )


def _hf(project: Project, program: Program):
    return [s for s in project.frameworks.hf_arguments if s.program is program]


def check_hf_dataloader(
    project: Project, program: Program, values: Values
) -> Iterator[CodeFinding]:
    """Hugging Face's Trainer builds its own DataLoaders from the training arguments: its
    workers (0 by default) and pinned memory (on by default) are said there."""
    for site in _hf(project, program):
        call = site.call
        name = short_call(program, call)
        workers = values.argument(call, "dataloader_num_workers")
        known_workers = workers is not None and workers.known
        if _no_workers(workers):
            how = (
                "leaves dataloader_num_workers"
                if workers is None
                else "sets dataloader_num_workers"
            )
            yield make(
                "dataloader_num_workers",
                Kind.CHANGE,
                program,
                call,
                f"`{name}` {how} at 0: the Trainer then loads every batch in the training "
                "process itself, and the GPU waits while the CPU prepares the next one.",
                f"Set dataloader_num_workers={project.cpus} (the CPUs the job has per GPU).",
                _hf_fix(program, call, workers, {"dataloader_num_workers": str(project.cpus)}),
            )
        elif not known_workers and (stated := _stated(project, program, workers)) is not None:
            yield from _stated_findings(project, stated, "dataloader_num_workers", name)
        elif not known_workers:
            yield make(
                "dataloader_num_workers",
                Kind.QUESTION,
                program,
                workers.node,
                f"dataloader_num_workers {_comes_from(workers)}: make sure it is more than 0 on "
                f"the cluster ({_cpus(project)}).",
                f"Pass {project.cpus} (the CPUs the job has per GPU) on the cluster.",
            )
        pin = values.argument(call, "dataloader_pin_memory")  # the Trainer pins by default
        if pin is not None and pin.known and not pin.value:
            yield make(
                "dataloader_pin_memory",
                Kind.CHANGE,
                program,
                pin.node,
                "dataloader_pin_memory=False turns off the pinned memory the Trainer uses by "
                "default: copies to the GPU then take an extra staging step.",
                "Remove dataloader_pin_memory=False (or set it to True).",
                _hf_fix(program, call, pin, {"dataloader_pin_memory": "True"}, in_place=True),
            )
        elif pin is not None and not pin.known:
            yield make(
                "dataloader_pin_memory",
                Kind.QUESTION,
                program,
                pin.node,
                f"dataloader_pin_memory {_comes_from(pin)}: make sure it stays True on the GPU.",
                "Pass True on the cluster.",
            )
    if project.frameworks.hf_arguments or program is not project.entry:
        return
    for site in project.frameworks.hf_trainers[:1]:
        arguments = values.argument(site.call, "args", 1)
        if arguments is None:
            continue  # no arguments at all: the Trainer's defaults (0 workers) apply
        yield make(
            "dataloader_num_workers",
            Kind.QUESTION,
            site.program,
            site.call,
            f"The Trainer's loader workers come from `{arguments.text}`, which the code does "
            "not build here: make sure dataloader_num_workers is more than 0 on the cluster "
            f"({_cpus(project)}).",
            f"Pass --dataloader_num_workers {project.cpus} (or set it where the arguments are "
            "made).",
        )


def _hf_fix(
    program: Program,
    call: ast.Call,
    given: Value | None,
    changes: dict[str, str],
    in_place: bool = False,
):
    """The call with these keywords set; `in_place`, for a finding at the keyword it sets:
    only that keyword's lines, which the finding names."""
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    if in_place and not (given and given.spread) and changes.keys() <= keywords.keys():
        return replace_values(program, keywords, changes)
    snippet = set_keywords(program, call, changes)
    if given is not None and given.spread:
        return snippet.without_after()
    return snippet
