"""Where a program-wide fix holds for the whole run (003). A process-wide setting (TF32, cuDNN's
benchmark mode) goes at the start of the entry file's main function, else right after its
imports: never in one model's constructor, a loop or a branch that may not run. A model-level
fix (torch.compile, channels_last) goes right after the model the program trains is built or
moved: the one its optimizer, its trainer or its DDP wrapper is given, not a part of it."""

import ast
from dataclasses import dataclass

from guidance.engine.code_check.program import Program

# Wrappers that take the trained model: where the model they are given is the one trained.
WRAPPERS = (
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel",
)
SPAWNERS = ("torch.multiprocessing.spawn", "torch.multiprocessing.start_processes")
# Tests that hold on any GPU run: a setting under them is set wherever it matters.
_ALWAYS_ON_GPU = ("cuda", "is_available", "__name__")


def main_function(programs: list[Program]) -> tuple[Program, ast.FunctionDef] | None:
    """The function the entry file runs: the one called under `if __name__ == "__main__":`
    (or handed there to a call: `fire.Fire(main)`; where it hands a worker to `mp.spawn`, the
    worker each process runs), else the one its last top-level call runs; a function it
    imports from another file of the program is looked up there."""
    program = programs[0]
    guards = [
        s.body
        for s in program.tree.body
        if isinstance(s, ast.If) and "__name__" in program.segment(s.test)
    ]
    calls = [[s] for s in reversed(program.tree.body) if isinstance(s, ast.Expr)]
    for body in [*guards, *calls]:
        for name in _called_names(body):
            found = _function(programs, program, name)
            if found is not None:
                owner, function = found
                return _spawned(programs, owner, function) or found
    return None


def _called_names(body: list[ast.stmt]) -> list[str]:
    """The names called (or handed to a call) in these statements, in order."""
    names = []
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Call):
                names += [p.id for p in (node.func, *node.args) if isinstance(p, ast.Name)]
    return names


def _function(
    programs: list[Program], program: Program, name: str
) -> tuple[Program, ast.FunctionDef] | None:
    """The top-level function `name` means in this file: its own, or one it imports from
    another file of the program (`from trainer import run`)."""
    for node in program.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return program, node  # type: ignore[return-value]
    qualname = program.aliases.get(name, "")
    module, _, function = qualname.rpartition(".")
    if not module:
        return None
    path = module.replace(".", "/")
    for other in programs[1:]:
        if other.name in (f"{path}.py", f"{path}/__init__.py") or other.name.endswith(
            f"/{path}.py"
        ):
            for node in other.tree.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                    node.name == function
                ):
                    return other, node  # type: ignore[return-value]
    return None


def _spawned(
    programs: list[Program], program: Program, main: ast.FunctionDef
) -> tuple[Program, ast.FunctionDef] | None:
    """The worker `mp.spawn(worker, ...)` starts from main: settings made in the parent do not
    reach processes started afresh."""
    for node in ast.walk(main):
        if isinstance(node, ast.Call) and program.qualname(node.func) in SPAWNERS and node.args:
            worker = node.args[0]
            if isinstance(worker, ast.Name):
                return _function(programs, program, worker.id)
    return None


def after_imports(program: Program) -> ast.stmt | None:
    """The first top-level statement after the imports that open the file (and after the one
    that imports torch, wherever it is), the docstring skipped."""
    body = program.tree.body
    torch_at = max(
        (
            i
            for i, s in enumerate(body)
            if isinstance(s, (ast.Import, ast.ImportFrom))
            and any((a.asname or a.name).split(".")[0] == "torch" for a in s.names)
        ),
        default=-1,
    )
    for i, statement in enumerate(body):
        if i <= torch_at or isinstance(statement, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # the docstring
        return statement
    return None


def run_start(programs: list[Program]) -> tuple[Program, ast.stmt] | None:
    """Where a process-wide setting goes, before this statement: main's first (its docstring
    skipped), else the entry's first after its imports."""
    found = main_function(programs)
    if found is not None:
        program, main = found
        body = main.body
        if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        if body and body[0].lineno > main.lineno:
            return program, body[0]
    start = after_imports(programs[0])
    return (programs[0], start) if start is not None else None


@dataclass(frozen=True)
class Branch:
    """Why a setting may not run: `what` in words, at `line`."""

    what: str
    line: int


def branch_of(program: Program, node: ast.AST) -> Branch | None:
    """The branch or model constructor a statement sits in, where that may not run on every
    run; None where it runs whenever its function does (a loop runs it on its first pass)."""
    for parent in program.ancestors(node):
        if isinstance(parent, ast.ClassDef):
            return Branch(f"when `{parent.name}` is built", parent.lineno)
        if isinstance(parent, (ast.If, ast.IfExp, ast.While)):
            test = program.segment(parent.test)
            if any(word in test for word in _ALWAYS_ON_GPU):
                continue
            return Branch(f"under `{_short(test)}`", parent.lineno)
        if isinstance(parent, ast.ExceptHandler):
            return Branch("only when an exception is caught", parent.lineno)
    return None


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:37] + "..."


# --- the model the program trains ---------------------------------------------------------


def trained_models(programs: list[Program]) -> list[tuple[Program, ast.expr, ast.AST]]:
    """(file, the model expression, where it is handed on), in the order that says most: a
    trainer's fit(model) or Trainer(model=...), a DDP/DataParallel wrapper, the optimizers'
    `X.parameters()`."""
    fits, wrapped, optimized = [], [], []
    for program in programs:
        for call in program.calls:
            func = call.func
            name = getattr(func, "attr", None) or getattr(func, "id", None)
            qualname = program.qualname(func) or ""
            if name == "fit" and isinstance(func, ast.Attribute):
                given = [k.value for k in call.keywords if k.arg == "model"] + call.args[:1]
                fits += [(program, g, call) for g in given[:1]]
            elif name == "Trainer":
                fits += [(program, k.value, call) for k in call.keywords if k.arg == "model"]
            elif qualname in WRAPPERS or name in ("DDP", "DistributedDataParallel"):
                wrapped += [(program, a, call) for a in call.args[:1]]
            elif qualname.startswith("torch.optim.") and "lr_scheduler" not in qualname:
                optimized += [(program, m, call) for m in _parameters_of(call)]
    return [
        (program, _unmoved(model), at)
        for program, model, at in fits + wrapped + optimized
        if isinstance(_unmoved(model), (ast.Name, ast.Attribute))
    ]


def _parameters_of(call: ast.Call) -> list[ast.expr]:
    """The models whose `.parameters()` an optimizer is given, in order; of `encoder.linear`,
    the encoder."""
    found = []
    for node in sorted(
        (n for arg in [*call.args, *call.keywords] for n in ast.walk(arg)),
        key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)),
    ):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("parameters", "named_parameters")
        ):
            receiver = node.func.value
            while isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name):
                if receiver.value.id == "self":
                    break
                receiver = receiver.value
            found.append(receiver)
    return found


def _unmoved(node: ast.expr) -> ast.expr:
    """`model.to(device)` -> model."""
    while (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("to", "cuda")
    ):
        node = node.func.value
    return node


def built_at(program: Program, model: ast.expr, at: ast.AST) -> ast.stmt | None:
    """The last statement before `at`, in its function, that builds or moves `model`
    (`model = Net()`, `model = model.to(device)`, `model.cuda()`), not one that wraps it; lifted
    out of any branch that `at` is not in, so that the fix holds on every branch."""
    name = program.segment(model)
    scope = program.function_of(at)
    use = program.statement_of(at)
    last = None
    for node in ast.walk(scope):
        if not isinstance(node, (ast.Assign, ast.Expr)) or node.lineno >= use.lineno:
            continue
        if program.function_of(node) is not scope or not isinstance(node.value, ast.Call):
            continue
        if isinstance(node, ast.Assign):
            targets = [program.segment(t) for t in node.targets]
            if name not in targets or _wraps(program, node.value):
                continue
        elif program.segment(_unmoved(node.value)) != name or node.value is _unmoved(node.value):
            continue  # only `model.to(device)` moves it in place
        if last is None or node.lineno > last.lineno:
            last = node
    if last is None:
        return None
    around = set(program.ancestors(use)) | {use}
    statement: ast.stmt = last
    parent = program.parents.get(statement)
    while parent is not None and parent not in around:
        statement, parent = parent, program.parents.get(parent)  # type: ignore[assignment]
    return statement


def _wraps(program: Program, call: ast.Call) -> bool:
    name = getattr(call.func, "attr", None) or getattr(call.func, "id", None)
    qualname = program.qualname(call.func) or ""
    return qualname in WRAPPERS or name in ("DDP", "compile") or qualname == "torch.compile"


def next_statement(program: Program, statement: ast.stmt) -> ast.stmt | None:
    """The statement after this one in its block: a fix that follows a whole `if`/`else` goes
    before it, where its lines show."""
    parent = program.parents.get(statement)
    for field in ("body", "orelse", "finalbody", "handlers"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and statement in block:
            i = block.index(statement)
            return block[i + 1] if i + 1 < len(block) else None
    return None


def layers_of(
    classes: dict[str, tuple[Program, ast.ClassDef]],
    program: Program,
    call: ast.Call,
    seen: set[str] | None = None,
) -> set[str]:
    """The qualified names of the calls a model's construction makes: those written in it
    (`nn.Sequential(nn.Conv2d(...))`), and every call in the program's own classes it builds,
    followed into the classes those build."""
    seen = set() if seen is None else seen
    found: set[str] = set()
    for inner in ast.walk(call):
        if not isinstance(inner, ast.Call):
            continue
        name = getattr(inner.func, "attr", None) or getattr(inner.func, "id", None) or ""
        if name not in classes:
            found.add(program.qualname(inner.func) or name)
        elif name not in seen:
            seen.add(name)
            owner, node = classes[name]
            for statement in node.body:
                for part in ast.walk(statement):
                    if isinstance(part, ast.Call):
                        found |= layers_of(classes, owner, part, seen)
    return found


def construction(program: Program, model: ast.expr, before: ast.AST) -> ast.Call | None:
    """The call that built `model` in the function that hands it on: `Net()` of
    `model = Net().to(device)`; None where it comes from elsewhere."""
    name = program.segment(model)
    scope = program.function_of(before)
    found = None
    for node in ast.walk(scope):
        if not isinstance(node, ast.Assign) or node.lineno >= program.statement_of(before).lineno:
            continue
        value = _unmoved(node.value) if isinstance(node.value, ast.Call) else None
        if not isinstance(value, ast.Call) or _wraps(program, value):
            continue
        if name in [program.segment(t) for t in node.targets]:
            found = value
    return found
