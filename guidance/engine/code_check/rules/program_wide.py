"""Settings that hold for the whole program: cuDNN's benchmark mode, TF32, mixed precision,
torch.compile, channels_last (003). Each is said at most once, only for a program that trains or
evaluates on a GPU, where the fix goes: at the framework's argument when a framework governs it
(Lightning's Trainer, Hugging Face's TrainingArguments, accelerate's Accelerator), otherwise
where it holds for the whole run (places.py): a process-wide setting at the start of main (one
set only on a branch is moved there), a model-level fix after the trained model is built."""

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from guidance.engine.code_check import frameworks, places
from guidance.engine.code_check.configs import as_yaml
from guidance.engine.code_check.context import Project, make
from guidance.engine.code_check.findings import CodeFinding, Kind
from guidance.engine.code_check.frameworks import Site
from guidance.engine.code_check.program import SOURCE_ORDER, Program
from guidance.engine.code_check.rules.layers import CONVOLUTIONS
from guidance.engine.code_check.snippets import (
    Edit,
    Snippet,
    apply,
    insert_lines,
    short_call,
    statement_lines,
    torch_name,
)
from guidance.engine.code_check.values import Symbol, Value, Values

CONV_2D = frozenset(
    {
        "torch.nn.Conv2d",
        "torch.nn.ConvTranspose2d",
        "torch.nn.LazyConv2d",
        "torch.nn.modules.conv.Conv2d",
    }
)
AUTOCAST = frozenset(
    {
        "torch.autocast",
        "torch.cuda.amp.autocast",
        "torch.amp.autocast",
        "torch.amp.autocast_mode.autocast",
    }
)
LOW_PRECISION = frozenset({"float16", "bfloat16", "half", "float8_e4m3fn", "float8_e5m2"})
MODEL_WORDS = ("model", "net")
# Convolutional vision models built by a library: torchvision's and timm's.
VISION_MODELS = ("torchvision.models.", "timm.create_model", "timm.models.")
_VISION_LIBRARIES = ("torchvision", "timm")


# --- where a program-wide fix goes -------------------------------------------------------------


@dataclass(frozen=True)
class Place:
    program: Program
    statement: ast.stmt
    model: str = ""  # the name the model is assigned to, where the place is its construction
    after: bool = True  # a model-level fix goes after the statement, else before it


def _place(project: Project) -> Place:
    """Where a model-level fix goes: after the trained model is built or moved."""
    place = project.memo.get("place")
    if place is None:
        place = project.memo["place"] = _trained_place(project) or _find_place(project)
    return place  # type: ignore[return-value]


def _run_place(project: Project) -> Place:
    """Where a process-wide setting goes: the start of the entry's main, else after its
    imports; the model's place where the entry has neither (it only calls a trainer)."""
    start = places.run_start(project.programs)
    if start is None:
        return _place(project)
    return Place(*start)


def _trained(project: Project) -> list[tuple[Program, ast.expr, ast.AST]]:
    found = project.memo.get("trained")
    if found is None:
        found = project.memo["trained"] = places.trained_models(project.programs)
    return found  # type: ignore[return-value]


def _trained_place(project: Project, keep=lambda program, model, at: True) -> Place | None:
    """After the statement that builds (or moves) the first trained model `keep` accepts."""
    for program, model, at in _trained(project):
        if not keep(program, model, at):
            continue
        statement = places.built_at(program, model, at)
        if statement is None:
            continue
        name = program.segment(model)
        if hasattr(statement, "body"):  # lifted out of a branch: before what follows it
            following = places.next_statement(program, statement)
            if following is None:
                continue
            return Place(program, following, name, after=False)
        return Place(program, statement, name)
    return None


def _find_place(project: Project) -> Place:
    """Where the trained model is not seen handed to an optimizer, trainer or wrapper: the
    first model construction in the entry file, else in the file that builds the model
    (an entry that only calls `run()` from its trainer module), else the entry's first
    statement after its imports."""
    entry = project.entry
    classes = _model_classes(project)
    for program in project.programs:
        place = _construction(program, classes)
        if place is not None:
            return place
    body = entry.tree.body
    for statement in body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # the docstring
        return Place(entry, statement)
    return Place(entry, body[-1] if body else ast.Pass(lineno=1, col_offset=0, end_lineno=1))


def _construction(program: Program, classes: frozenset[str]) -> Place | None:
    candidates = [
        node
        for node in program.by_type[ast.Assign]
        if len(node.targets) == 1 and isinstance(node.value, ast.Call)
    ]
    # A block built inside a model class (`self.encoder = Encoder()`) is a part of a model:
    # the model itself, built outside any class, comes first.
    in_class = {
        id(node)
        for node in candidates
        if any(isinstance(a, ast.ClassDef) for a in program.ancestors(node))
    }
    for node in sorted(candidates, key=lambda n: (id(n) in in_class, SOURCE_ORDER(n))):
        target = node.targets[0]
        name = getattr(target, "id", None) or getattr(target, "attr", None)
        if name and _builds_model(program, node.value, name.lower(), target, classes):
            return Place(program, node, program.segment(target))
    return None


def _imports_torch(program: Program) -> bool:
    return "torch" in program.aliases.values()


def _model_classes(project: Project) -> frozenset[str]:
    """The program's own model classes: those built on nn.Module, a LightningModule, a
    Hugging Face PreTrainedModel."""
    names = set()
    for program in project.programs:
        for node in program.by_type[ast.ClassDef]:
            bases = [program.segment(base) for base in node.bases]
            if any(base.endswith(("Module", "PreTrainedModel")) for base in bases):
                names.add(node.name)
    return frozenset(names)


def _builds_model(
    program: Program, call: ast.Call, name: str, target: ast.expr, classes: frozenset[str]
) -> bool:
    """`model = Net()`, `self.net = torchvision.models.resnet50().cuda()`: a model built, not
    moved (`model.to(device)`) nor wrapped (`model = DDP(model)`)."""
    moves = ("to", "cuda")
    while (
        isinstance(call.func, ast.Attribute)
        and call.func.attr in moves
        and isinstance(call.func.value, ast.Call)
    ):
        call = call.func.value  # Net().to(device): the construction inside
    if isinstance(call.func, ast.Attribute) and call.func.attr in moves:
        return False
    built = getattr(call.func, "id", None) or getattr(call.func, "attr", None)
    last_word = name.rsplit("_", 1)[-1]  # net_config is a config, resnet and self.model models
    if last_word.endswith(MODEL_WORDS) or last_word == "network" or built in classes:
        target_text = program.segment(target)
        return not any(program.segment(arg) == target_text for arg in call.args)
    qualname = program.qualname(call.func) or ""
    if qualname.startswith(VISION_MODELS):
        return True
    return qualname.endswith("from_pretrained") and "Model" in qualname


def _at_place(
    rule: str,
    project: Project,
    message: str,
    fix: str,
    lines: list[str] | None = None,
    after: bool = False,
    place: Place | None = None,
) -> CodeFinding:
    place = place or _place(project)
    after = after and place.after
    if lines and not _imports_torch(place.program) and any("torch." in line for line in lines):
        lines = ["import torch", *lines]  # a file that only calls the trainer's run()
    snippet = insert_lines(place.program, place.statement, lines, after) if lines else None
    if snippet is None:
        statement = place.statement
        text = place.program.line_text(statement.lineno, statement.lineno)
        snippet = Snippet(text, "", statement.lineno, statement.lineno)
    return make(rule, Kind.CHANGE, place.program, place.statement, message, fix, snippet)


# --- reading the program ------------------------------------------------------------------------


def _assigned(project: Project, qualname: str) -> list[tuple[Program, ast.Assign, Value]]:
    """Every `qualname = value` in the program (torch.backends.cudnn.benchmark = True)."""
    found = []
    last = qualname.rsplit(".", 1)[-1]
    for program in project.programs:
        values = project.values[program.name]
        for node, target in program.attribute_assignments.get(last, ()):
            if program.qualname(target) == qualname and not (found and found[-1][1] is node):
                found.append((program, node, values.value(node.value)))
    return sorted(found, key=lambda f: (f[0] is not project.entry, f[1].lineno))


def _argument(project: Project, site: Site, name: str, position: int | None = None) -> Value | None:
    values = project.values.get(site.program.name)  # none for a config's framework
    return frameworks.argument(values, site, name, position)  # type: ignore[arg-type]


def _file(site: Site, given: Value | None) -> Program:
    """The file a finding about the framework's argument names: where the argument is
    written (a YAML file for a config's key), else the framework's own."""
    return getattr(given, "file", None) or site.program


def _pass(site: Site, name: str, value: object) -> str:
    """ "Pass precision="bf16-mixed"", or for a config "Set `precision: bf16-mixed` in
    trainer.yaml"."""
    if site.config is not None:
        return f"Set `{name}: {as_yaml(value)}` in the Trainer's config"
    return f"Pass {name}={value!r}".replace("'", '"')


def _node(value: Value) -> ast.AST:
    return value.node


def _is_true(value: Value | None) -> bool:
    return value is not None and value.known and bool(value.value)


def _framework_fix(
    project: Project, site: Site, changes: dict[str, str], given: Value | None
) -> Snippet:
    values = project.values.get(site.program.name)  # none for a config's framework
    snippet = frameworks.settings_fix(values, site, changes)  # type: ignore[arg-type]
    return snippet.without_after() if given is not None and given.spread else snippet


def _question(rule: str, program: Program, node: ast.AST, message: str, fix: str) -> CodeFinding:
    return make(rule, Kind.QUESTION, program, node, message, fix)


def _calls(project: Project, *qualnames: str) -> list[tuple[Program, ast.Call]]:
    return project.calls_named(*qualnames)


def _builds(project: Project, layers: frozenset[str]) -> bool:
    for program in project.programs:
        for qualname in program.calls_by_name:
            if qualname in layers or qualname.startswith(VISION_MODELS):
                return True
        # models.__dict__[args.arch](): a vision library imported and looked into.
        if not any(q.startswith(_VISION_LIBRARIES) for q in program.aliases.values()):
            continue
        for node in program.by_type[ast.Attribute]:
            if isinstance(node.value, ast.Name) and (program.qualname(node) or "").startswith(
                VISION_MODELS
            ):
                return True
    return False


# --- cuDNN benchmark ----------------------------------------------------------------------------


def check_cudnn_benchmark(project: Project) -> Iterator[CodeFinding]:
    if not project.runs_model_on_gpu or not _builds(project, CONVOLUTIONS):
        return
    rule = "cudnn_benchmark"
    deterministic = _assigned(project, "torch.backends.cudnn.deterministic")
    reproducible = any(_is_true(value) for _, _, value in deterministic)
    settings = _assigned(project, "torch.backends.cudnn.benchmark")
    on = [(program, node) for program, node, value in settings if _is_true(value)]
    if on:
        yield from _set_on_a_branch(rule, project, on, "cuDNN's benchmark mode", "benchmark")
        return
    for site in project.frameworks.lightning[:1]:
        given = _argument(project, site, "benchmark")
        if _is_true(given):
            return
        lightning_deterministic = _is_true(_argument(project, site, "deterministic"))
        if given is not None and not given.known:
            yield _question(
                rule,
                _file(site, given),
                _node(given),
                f"cuDNN's benchmark mode comes from `{given.text}`: make sure it is True unless "
                "you need bit-for-bit reproducible runs.",
                f"{_pass(site, 'benchmark', True)} on the cluster.",
            )
            return
        if lightning_deterministic or reproducible:
            yield _reproducible(project, site.program, site.call)
            return
        if not settings:
            yield make(
                rule,
                Kind.CHANGE,
                _file(site, given),
                site.call if given is None else _node(given),
                f"{frameworks.describe(site)} leaves cuDNN's benchmark mode off: "
                "every convolution runs with a default algorithm instead of the fastest one "
                "for its shapes on this GPU.",
                f"{_pass(site, 'benchmark', True)}{'' if site.config else ' to the Trainer'}.",
                _framework_fix(project, site, {"benchmark": "True"}, given),
            )
            return
    for program, node, value in settings:
        if not value.known:
            yield _question(
                rule,
                program,
                node,
                f"cuDNN's benchmark mode comes from `{value.text}`: make sure it is True unless "
                "you need bit-for-bit reproducible runs.",
                "Set it to True on the cluster.",
            )
            return
        if reproducible:
            yield _reproducible(project, program, node)
            return
        torch = torch_name(program)
        yield make(
            rule,
            Kind.CHANGE,
            program,
            node,
            "cuDNN's benchmark mode is turned off here: every convolution runs with a default "
            "algorithm instead of the fastest one for its shapes on this GPU.",
            "Set it to True (it times the algorithms once per input shape, then uses the fastest).",
            Snippet(
                program.line_text(node.lineno, node.end_lineno or node.lineno),
                f"{program.indent(node.lineno)}{torch}.backends.cudnn.benchmark = True",
                node.lineno,
                node.end_lineno or node.lineno,
            ),
        )
        return
    if reproducible:
        program, node, _ = deterministic[0]
        yield _reproducible(project, program, node)
        return
    torch = torch_name(_run_place(project).program)
    yield _at_place(
        rule,
        project,
        "The program builds convolutions but never turns on cuDNN's benchmark mode: every "
        "convolution then runs with a default algorithm instead of the fastest one for its "
        "shapes on this GPU.",
        f"Set {torch}.backends.cudnn.benchmark = True before training (it times the algorithms "
        "once per input shape, then uses the fastest).",
        [f"{torch}.backends.cudnn.benchmark = True"],
        place=_run_place(project),
    )


# The line that turns each process-wide setting on, at the start of the run.
_TURN_ON = {
    "benchmark": "{torch}.backends.cudnn.benchmark = True",
    "tf32": "{torch}.backends.cuda.matmul.allow_tf32 = True",
}


def _set_on_a_branch(
    rule: str, project: Project, on: list[tuple[Program, ast.AST]], what: str, key: str
) -> Iterator[CodeFinding]:
    """Nothing where one of the settings runs on every run; else a change that moves it to
    the start of the run, naming the branch it is set on."""
    branches = [(program, places.branch_of(program, node)) for program, node in on]
    if any(branch is None for _, branch in branches):
        return
    program, branch = branches[0]
    assert branch is not None
    where = "" if program is project.entry else f" of {program.name}"
    place = _run_place(project)
    torch = torch_name(place.program)
    line = _TURN_ON[key].format(torch=torch)
    yield _at_place(
        rule,
        project,
        f"{what} is turned on only {branch.what} (line {branch.line}{where}): on the runs "
        "that take another path it stays off.",
        f"Move `{line}` to the start of the run, where it holds whatever path the run takes.",
        [line],
        place=place,
    )


def _reproducible(project: Project, program: Program, node: ast.AST) -> CodeFinding:
    return _question(
        "cudnn_benchmark",
        program,
        node,
        "The program asks cuDNN for deterministic results, so benchmark mode stays off: "
        "reproducibility is chosen over speed. Is that needed for this run?",
        "Where exact reproducibility is not needed, set cudnn.benchmark = True (and drop "
        "deterministic) for faster convolutions.",
    )


# --- TF32 ---------------------------------------------------------------------------------------


def check_tf32(project: Project) -> Iterator[CodeFinding]:
    if not project.runs_model_on_gpu:
        return
    rule = "tf32"
    flags = _assigned(project, "torch.backends.cuda.matmul.allow_tf32")
    precision_calls = _calls(project, "torch.set_float32_matmul_precision")
    on = [(program, node) for program, node, value in flags if _is_true(value)]
    for program, call in precision_calls:
        given = project.values[program.name].argument(call, "precision", 0)
        if given is not None and given.known and given.value in ("high", "medium"):
            on.append((program, call))
    if on:
        yield from _set_on_a_branch(rule, project, on, "TF32", "tf32")
        return
    for site in project.frameworks.hf_arguments[:1]:
        given = _argument(project, site, "tf32")
        if _is_true(given):
            return
        if given is not None and not given.known:
            yield _question(
                rule,
                site.program,
                _node(given),
                f"TF32 comes from `{given.text}`: make sure it is True on GPUs that have it "
                "(A100, H100 and later).",
                "Pass tf32=True on the cluster.",
            )
            return
        if not flags and not precision_calls:
            yield make(
                rule,
                Kind.CHANGE,
                site.program,
                site.call if given is None else _node(given),
                f"`{short_call(site.program, site.call)}` does not turn on TF32: float32 matrix "
                "multiplications then skip the GPU's tensor cores.",
                "Set tf32=True in the training arguments.",
                _framework_fix(project, site, {"tf32": "True"}, given),
            )
            return
    if project.frameworks.hf_trainers and not project.frameworks.hf_arguments:
        return  # the arguments come from elsewhere (a parser, a config): not knowable
    for program, node, value in flags:
        if not value.known:
            yield _question(
                rule,
                program,
                node,
                f"TF32 for matrix multiplications comes from `{value.text}`: make sure it is True.",
                "Set it to True on the cluster.",
            )
            return
    for program, call in precision_calls:
        given = project.values[program.name].argument(call, "precision", 0)
        if given is not None and not given.known:
            yield _question(
                rule,
                program,
                call,
                f"The float32 matmul precision comes from `{given.text}`: make sure it is "
                '"high" so that matrix multiplications use TF32.',
                'Pass "high" on the cluster.',
            )
            return
    torch = torch_name(_run_place(project).program)
    yield _at_place(
        rule,
        project,
        "The program never allows TF32 for float32 matrix multiplications, so they skip the "
        "tensor cores of A100-class and newer GPUs. (cuDNN convolutions already use TF32 by "
        "default.)",
        f"Set {torch}.backends.cuda.matmul.allow_tf32 = True (or call "
        f'{torch}.set_float32_matmul_precision("high")) before training.',
        [f"{torch}.backends.cuda.matmul.allow_tf32 = True"],
        place=_run_place(project),
    )


# --- mixed precision ----------------------------------------------------------------------------


def _low_precision(value: Value | None) -> bool:
    if value is None or not value.known:
        return False
    if isinstance(value.value, Symbol):
        return value.value.last in LOW_PRECISION
    return isinstance(value.value, str) and value.value in (*LOW_PRECISION, "auto")


def _uses_reduced_precision(project: Project) -> bool:
    """autocast anywhere but on the CPU (called, or referred to: `partial(torch.autocast,
    ...)`, a name given it, even behind a flag), a half/bfloat16 model (not a mask or other
    tensor made half), a model loaded in 16 bits."""
    models = _model_names(project)
    for program in project.programs:
        values = project.values[program.name]
        if _autocasts(program, values):
            return True
        for name in ("half", "bfloat16"):
            if any(
                isinstance(c.func, ast.Attribute) and _model_like(program, c.func.value, models)
                for c in program.calls_by_attr.get(name, ())
            ):
                return True
        for call in program.calls_by_attr.get("to", ()):
            if not _model_like(program, call.func.value, models):
                continue
            given = [k.value for k in call.keywords if k.arg == "dtype"] + call.args[:1]
            if any(_low_precision(_dtype(program, values, arg)) for arg in given):
                return True
        for call in program.by_type[ast.Call]:
            if not _loads_model(call):
                continue
            for keyword in call.keywords:
                if keyword.arg in ("torch_dtype", "dtype") and _low_precision(
                    values.value(keyword.value)
                ):
                    return True
        for call in program.calls_named("torch.set_default_dtype"):
            if call.args and _low_precision(values.value(call.args[0])):
                return True
    return False


def _autocasts(program: Program, values: Values) -> bool:
    """An autocast on a GPU: one called with a device other than the literal "cpu", or
    referred to without being called here (behind a flag, through partial)."""
    calls = [
        *(
            c
            for c in program.calls_by_attr.get("autocast", ())
            if isinstance(c.func, ast.Attribute)
        ),
        *(c for c in program.calls_named(*AUTOCAST) if not isinstance(c.func, ast.Attribute)),
    ]
    if not calls:
        return _refers_to_autocast(program)
    for call in calls:
        device = values.argument(call, "device_type", 0)
        if not (device is not None and device.known and device.value == "cpu"):
            return True
    called = {id(call.func) for call in calls}
    return any(
        id(node) not in called and program.qualname(node) in AUTOCAST
        for node in program.attributes.get("autocast", ())
    )


def _model_names(project: Project) -> frozenset[str]:
    """The names the program builds its models into (`netG`, `self.encoder`: their last
    part), and its model classes."""
    names = project.memo.get("model names")
    if names is None:
        classes = _model_classes(project)
        found = set(classes)  # `Net().half()`
        for program in project.programs:
            for node in program.by_type[ast.Assign]:
                if len(node.targets) != 1 or not isinstance(node.value, ast.Call):
                    continue
                target = node.targets[0]
                name = getattr(target, "id", None) or getattr(target, "attr", None)
                if name and _builds_model(program, node.value, name.lower(), target, classes):
                    found.add(name)
        names = project.memo["model names"] = frozenset(found)
    return names  # type: ignore[return-value]


def _model_like(program: Program, node: ast.AST, models: frozenset[str]) -> bool:
    """A model, not a tensor: a name the program builds a model into or one that says so
    (model, net), or a model built in place (`Net().half()`, `resnet50().cuda().half()`)."""
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("to", "cuda", "eval", "train", "half", "bfloat16")
    ):
        node = node.func.value
    if isinstance(node, ast.Call):
        if _loads_model(node) or (program.qualname(node.func) or "").startswith(VISION_MODELS):
            return True
        node = node.func
    name = getattr(node, "id", None) or getattr(node, "attr", None) or ""
    return name in models or any(word in name.lower() for word in MODEL_WORDS)


def _loads_model(call: ast.Call) -> bool:
    """`AutoModel.from_pretrained(...)`, `pipeline(...)`: where a dtype says the model's."""
    name = getattr(call.func, "attr", None) or getattr(call.func, "id", None)
    return name in ("from_pretrained", "from_config", "pipeline", "load_checkpoint_and_dispatch")


def _refers_to_autocast(program: Program) -> bool:
    if any(qualname in AUTOCAST for qualname in program.aliases.values()):
        return True  # `from torch import autocast`: imported to be used
    return any(
        program.qualname(node) in AUTOCAST for node in program.attributes.get("autocast", ())
    )


def _dtype(program: Program, values: Values, node: ast.AST) -> Value | None:
    """What a `.to(...)` is given, where it may be a dtype: torch.float16 and the like, or a
    name that says it is one (`dtype`, `amp_dtype`); other names (the device) are not read."""
    if isinstance(node, ast.Attribute):
        qualname = program.qualname(node)
        return Value(node, True, Symbol(qualname)) if qualname else None
    if isinstance(node, ast.Name) and "dtype" in node.id.lower():
        return values.value(node)
    return None


def check_mixed_precision(project: Project) -> Iterator[CodeFinding]:
    if not project.runs_model_on_gpu or _uses_reduced_precision(project):
        return
    rule = "mixed_precision"
    found = project.frameworks
    for site in found.lightning[:1]:
        yield from _lightning_precision(project, site)
        return
    for site in found.hf_arguments[:1]:
        yield from _hf_precision(project, site)
        return
    for site in found.hf_trainers[:1]:
        arguments = _argument(project, site, "args", 1)
        if arguments is not None:
            yield _question(
                rule,
                site.program,
                site.call,
                f"The Trainer's precision comes from `{arguments.text}`, which the code does "
                "not build here: make sure bf16 (or fp16) is set on the cluster.",
                "Pass --bf16 (or set bf16=True where the arguments are made).",
            )
            return
    for site in found.accelerators[:1]:
        given = _argument(project, site, "mixed_precision")
        if given is not None and given.known and given.value in ("fp16", "bf16", "fp8"):
            return
        if given is not None and given.known:
            yield make(
                rule,
                Kind.CHANGE,
                site.program,
                _node(given),
                f'mixed_precision="{given.value}" runs the model in float32: the tensor cores '
                "do far more per cycle in bfloat16 or float16, and activations take half the "
                "memory.",
                'Pass mixed_precision="bf16" (or "fp16" on GPUs without bfloat16).',
                _framework_fix(project, site, {"mixed_precision": '"bf16"'}, given),
            )
            return
        where = f"`{given.text}`" if given is not None else "the launcher (`accelerate launch`)"
        yield _question(
            rule,
            site.program,
            site.call if given is None else _node(given),
            f"The Accelerator's mixed precision comes from {where}: make sure it is bf16 (or "
            "fp16) on the cluster.",
            'Pass mixed_precision="bf16" to the Accelerator, or --mixed_precision bf16 to '
            "accelerate launch.",
        )
        return
    if found.hf_trainers:
        return  # a Trainer with its default arguments: said by the arguments' absence elsewhere
    yield _at_place(
        rule,
        project,
        "The program runs its model in float32 throughout: with automatic mixed precision the "
        "tensor cores do far more per cycle and activations take half the memory. Check that "
        "the model stays stable before relying on it.",
        'Run the forward pass and the loss under `with torch.autocast(device_type="cuda", '
        "dtype=torch.bfloat16):` (with float16, also scale the loss with "
        "torch.amp.GradScaler).",
    )


def _lightning_precision(project: Project, site: Site) -> Iterator[CodeFinding]:
    given = _argument(project, site, "precision")
    if given is not None and given.known:
        text = str(given.value)
        if text.startswith(("16", "bf16", "transformer-engine")) or text in ("8", "fp8"):
            return
    if given is not None and not given.known:
        yield _question(
            "mixed_precision",
            _file(site, given),
            _node(given),
            f"The Trainer's precision comes from `{given.text}`: make sure it is "
            '"bf16-mixed" (or "16-mixed") on the cluster.',
            f"{_pass(site, 'precision', 'bf16-mixed')}.",
        )
        return
    if given is None:
        now = "uses the default, 32-bit precision"
    elif site.config:
        now = f"sets `precision: {given.text}`"
    else:
        now = f"sets precision={given.text}"
    other = "16-mixed" if site.config else '"16-mixed"'
    yield make(
        "mixed_precision",
        Kind.CHANGE,
        _file(site, given),
        site.call if given is None else _node(given),
        f"{frameworks.describe(site)} {now}: with mixed precision the tensor cores "
        "do far more per cycle and activations take half the memory.",
        f"{_pass(site, 'precision', 'bf16-mixed')} (or {other} on GPUs without bfloat16).",
        _framework_fix(project, site, {"precision": '"bf16-mixed"'}, given),
    )


def _hf_precision(project: Project, site: Site) -> Iterator[CodeFinding]:
    bf16, fp16 = _argument(project, site, "bf16"), _argument(project, site, "fp16")
    if _is_true(bf16) or _is_true(fp16):
        return
    unknown = next((v for v in (bf16, fp16) if v is not None and not v.known), None)
    if unknown is not None:
        yield _question(
            "mixed_precision",
            site.program,
            _node(unknown),
            f"Mixed precision comes from `{unknown.text}`: make sure bf16 (or fp16) is True on "
            "the cluster.",
            "Pass bf16=True.",
        )
        return
    off = next((v for v in (bf16, fp16) if v is not None), None)
    yield make(
        "mixed_precision",
        Kind.CHANGE,
        site.program,
        site.call if off is None else _node(off),
        f"`{short_call(site.program, site.call)}` trains in float32: with bf16 (or fp16) the "
        "tensor cores do far more per cycle and activations take half the memory.",
        "Set bf16=True (fp16=True on GPUs without bfloat16).",
        _bf16_fix(project, site, off),
    )


def _bf16_fix(project: Project, site: Site, off: Value | None) -> Snippet:
    """bf16=True; where only `fp16=False` is written, that keyword becomes `bf16=True`, so
    the fix stays on the line the finding names."""
    keyword = next((k for k in site.call.keywords if k.arg == "fp16"), None)
    if off is None or keyword is None or _node(off) not in (keyword, keyword.value) or site.cli:
        return _framework_fix(project, site, {"bf16": "True"}, off)
    program = site.program
    first, last = statement_lines(program, keyword)
    edit = Edit(program.start(keyword), program.end(keyword), "bf16=True")
    return apply(program, first, last, [edit])


# --- torch.compile ------------------------------------------------------------------------------


def check_torch_compile(project: Project) -> Iterator[CodeFinding]:
    if not project.trains or not project.on_gpu:
        return
    rule = "torch_compile"
    compiled = _calls(project, "torch.compile")
    parts = [(program, call) for program, call in compiled if _compiles_a_part(program, call)]
    if compiled and (len(parts) < len(compiled) or _trained_place(project) is None):
        return  # the model, or a training step, is compiled; or what is trained is not known
    for program, call in project.calls_with_attr("compile"):
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        if receiver is not None and any(
            w in program.segment(receiver).lower() for w in MODEL_WORDS
        ):
            return  # model.compile(): nn.Module's own
    for site in project.frameworks.hf_arguments[:1]:
        given = _argument(project, site, "torch_compile")
        if _is_true(given):
            return
        if given is not None and not given.known:
            yield _question(
                rule,
                site.program,
                _node(given),
                f"torch.compile comes from `{given.text}`: consider turning it on once the "
                "training runs correctly.",
                "Pass torch_compile=True.",
            )
            return
        yield make(
            rule,
            Kind.CHANGE,
            site.program,
            site.call if given is None else _node(given),
            f"`{short_call(site.program, site.call)}` does not compile the model: "
            "torch.compile fuses its operations into fewer, faster GPU kernels.",
            "Set torch_compile=True once training runs correctly (compilation can fail on "
            "unusual models: try it first).",
            _framework_fix(project, site, {"torch_compile": "True"}, given),
        )
        return
    if project.frameworks.hf_trainers:
        return  # its arguments come from elsewhere
    place = _place(project)
    torch = torch_name(place.program)
    model = place.model or "model"
    message = (
        "The program never compiles its model: torch.compile fuses its operations into fewer, "
        "faster GPU kernels."
    )
    if parts:
        program, call = parts[0]
        part = program.segment(call.args[0]) if call.args else "a part"
        message = (
            f"torch.compile is applied to `{_short(part)}` (line {call.lineno}), one part of a "
            f"model, not to `{model}`, the model the program trains: the rest of it runs "
            "uncompiled, and each compiled part is a graph break."
        )
    yield _at_place(
        rule,
        project,
        message,
        f"Once training runs correctly, add `{model} = {torch}.compile({model})` after the model "
        "is built (wrap it in try/except: compilation can fail on unusual models)"
        + (", and compile the part no longer." if parts else "."),
        [f"{model} = {torch}.compile({model})"] if place.model else None,
        after=True,
    )


# --- channels_last ------------------------------------------------------------------------------


def check_channels_last(project: Project) -> Iterator[CodeFinding]:
    if not project.runs_model_on_gpu or not _builds(project, CONV_2D):
        return
    if any("channels_last" in program.attributes for program in project.programs):
        return
    convolutional = _trained_place(project, keep=lambda p, m, at: _convolutional(project, p, m, at))
    if convolutional is None and _trained_place(project) is not None:
        return  # the models it trains are built without 2-D convolutions (a recurrent decoder)
    place = convolutional or _place(project)
    torch = torch_name(place.program)
    model = place.model or "model"
    yield _at_place(
        "channels_last",
        project,
        "The program's convolutional vision model uses the default channels-first memory "
        "layout: in channels_last, convolutions run faster on the tensor cores.",
        f"Convert the model with `{model} = {model}.to(memory_format={torch}.channels_last)` "
        "and each input batch the same way, where no code depends on the exact dimension order.",
        [f"{model} = {model}.to(memory_format={torch}.channels_last)"] if place.model else None,
        after=True,
    )


def _compiles_a_part(program: Program, call: ast.Call) -> bool:
    """`self.encoder = torch.compile(Encoder())` inside a plain nn.Module: one block of the
    model compiled, not the model (a LightningModule's `self.model` is its whole model)."""
    given = program.segment(call.args[0]) if call.args else ""
    if given in ("self", "self.forward"):
        return False
    for node in program.ancestors(call):
        if isinstance(node, ast.ClassDef):
            bases = [program.segment(base) for base in node.bases]
            return any(b.endswith("Module") and "Lightning" not in b for b in bases)
    return False


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:37] + "..."


RECURRENT = ("LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell")


def _convolutional(project: Project, program: Program, model: ast.expr, at: ast.AST) -> bool:
    """Whether the trained model is built with 2-D convolutions: its own class (and the
    classes it builds) or a vision library's model; True where its construction is not seen."""
    call = places.construction(program, model, at)
    if call is None:
        return True
    classes = project.memo.get("classes")
    if classes is None:
        classes = project.memo["classes"] = {
            node.name: (owner, node)
            for owner in project.programs
            for node in owner.by_type[ast.ClassDef]
        }
    name = getattr(call.func, "attr", None) or getattr(call.func, "id", None) or ""
    qualname = program.qualname(call.func) or name
    layers = places.layers_of(classes, program, call)  # type: ignore[arg-type]
    if any(layer in CONV_2D or layer.startswith(VISION_MODELS) for layer in layers):
        return True
    if name in classes or qualname.startswith("torch.nn."):
        return False  # its layers are seen: none is a 2-D convolution
    return not name.endswith(RECURRENT)
