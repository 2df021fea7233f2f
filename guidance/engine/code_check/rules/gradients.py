"""Gradients: how they are cleared (zero_grad) and whether evaluation builds them at all
(torch.no_grad), from 003's "No brainer code tweaks"."""

import ast
from collections.abc import Iterator

from guidance.engine.code_check.context import Project, make
from guidance.engine.code_check.findings import CodeFinding, Kind
from guidance.engine.code_check.program import Program
from guidance.engine.code_check.snippets import (
    Edit,
    apply,
    statement_lines,
    torch_name,
    wrap_in_with,
)
from guidance.engine.code_check.values import Values

GRAD_OFF = frozenset(
    {
        "torch.no_grad",
        "torch.inference_mode",
        "torch.autograd.no_grad",
        "torch.autograd.grad_mode.no_grad",
        "torch.autograd.inference_mode",
    }
)
SET_GRAD_ENABLED = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled"})


def check_zero_grad(project: Project, program: Program, values: Values) -> Iterator[CodeFinding]:
    for call in program.calls_by_attr.get("zero_grad", ()):
        if not isinstance(call.func, ast.Attribute):
            continue
        receiver = program.segment(call.func.value)
        given = values.argument(call, "set_to_none", 0)
        if given is None:
            yield make(
                "zero_grad_set_to_none",
                Kind.DEFAULT,
                program,
                call,
                f"`{receiver}.zero_grad()`: PyTorch 2.0 and later already set gradients to None "
                "here (set_to_none=True is the default), which saves a memset of every gradient "
                "and the memory it holds.",
                "Nothing to change on PyTorch 2.0 or later; on an older PyTorch pass "
                "set_to_none=True.",
            )
        elif not given.known:
            yield make(
                "zero_grad_set_to_none",
                Kind.QUESTION,
                program,
                call,
                f"set_to_none comes from `{given.text}`: make sure it is True, so that gradients "
                "are dropped rather than filled with zeros at every step.",
                "Pass True.",
            )
        elif given.value is False or given.value == 0:
            node = given.node.value if isinstance(given.node, ast.keyword) else given.node
            first, last = statement_lines(program, call)
            snippet = apply(
                program, first, last, [Edit(program.start(node), program.end(node), "True")]
            )
            yield make(
                "zero_grad_set_to_none",
                Kind.CHANGE,
                program,
                call,
                f"`{receiver}.zero_grad(set_to_none=False)` writes zeros into every gradient at "
                "every step: memory traffic for nothing, since the next backward pass fills them "
                "again.",
                "Set set_to_none=True (the default since PyTorch 2.0).",
                snippet.without_after() if given.spread else snippet,
            )


def check_no_grad_evaluation(
    project: Project, program: Program, values: Values
) -> Iterator[CodeFinding]:
    for call in program.calls_by_attr.get("eval", ()):
        if not isinstance(call.func, ast.Attribute) or call.args or call.keywords:
            continue
        receiver = program.segment(call.func.value)
        function = program.function_of(call)
        if _gradients_off(program, values, function) or _called_without_gradients(
            project, function
        ):
            continue
        if not _runs_model_after(project, program, function, call, receiver):
            continue
        yield make(
            "no_grad_evaluation",
            Kind.CHANGE,
            program,
            call,
            f"`{receiver}` is put in eval mode and then run with gradient tracking still on: "
            "autograd records every operation for a backward pass that never comes, costing "
            "GPU time and memory.",
            "Run the evaluation under torch.no_grad() (or torch.inference_mode()): as a "
            "decorator on a function that only evaluates, as a `with` block otherwise.",
            _no_grad_fix(program, function, call, receiver),
        )


def _gradients_off(program: Program, values: Values, function: ast.AST) -> bool:
    """The function (or one around it) turns gradients off somewhere: decorator, `with`
    block, or torch.set_grad_enabled(False)."""
    for scope in [function, *program.ancestors(function)]:
        for decorator in getattr(scope, "decorator_list", ()):
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if program.qualname(target) in GRAD_OFF:
                return True
    for node in program.walk_scope(function):
        if isinstance(node, ast.Call):
            qualname = program.qualname(node.func)
            if qualname in GRAD_OFF:
                return True
            if qualname in SET_GRAD_ENABLED:
                mode = values.argument(node, "mode", 0)
                if mode is not None and mode.known and not mode.value:
                    return True
    return False


def _called_without_gradients(project: Project, function: ast.AST) -> bool:
    """Every call of the function is inside a `with torch.no_grad():` of its caller, or in a
    caller that turns gradients off itself."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    sites = project.calls_with_attr(function.name)
    if not sites:
        return False
    for program, call in sites:
        caller = program.function_of(call)
        if caller is not function and _gradients_off(program, project.values[program.name], caller):
            continue  # called from a function that turns gradients off
        inside = False
        for ancestor in program.ancestors(call):
            if isinstance(ancestor, (ast.With, ast.AsyncWith)) and any(
                isinstance(item.context_expr, ast.Call)
                and program.qualname(item.context_expr.func) in GRAD_OFF
                for item in ancestor.items
            ):
                inside = True
                break
        if not inside:
            return False
    return True


def _runs_model_after(
    project: Project, program: Program, function: ast.AST, eval_call: ast.Call, receiver: str
) -> bool:
    """The model is called (or its forward) after `.eval()` and before it is put back in
    training mode."""
    start = (eval_call.lineno, eval_call.col_offset)
    back_to_training = min(
        (at for at in _back_to_training(project, program).get(receiver, ()) if at > start),
        default=(10**9, 0),
    )
    runs = {receiver, f"{receiver}.forward"}
    # A called name or attribute is compared by its last name before any source text is read.
    last_names = {receiver.rsplit(".", 1)[-1], "forward", None}
    for node in program.walk_scope(function):
        if (
            isinstance(node, ast.Call)
            and (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) in last_names
            and start < (node.lineno, node.col_offset) < back_to_training
            and program.segment(node.func) in runs
        ):
            return True
    return False


def _back_to_training(project: Project, program: Program) -> dict[str, list[tuple[int, int]]]:
    """Where each model is put back in training mode (`model.train()`), by the model's text:
    read once per file for all its `.eval()` calls."""
    key = ("train calls", program.name)
    found = project.memo.get(key)
    if found is None:
        found = {}
        for call in program.calls_by_attr.get("train", ()):
            if isinstance(call.func, ast.Attribute):
                where = (call.lineno, call.col_offset)
                found.setdefault(program.segment(call.func.value), []).append(where)
        project.memo[key] = found
    return found  # type: ignore[return-value]


def _no_grad_fix(program: Program, function: ast.AST, eval_call: ast.Call, receiver: str):
    # A `with` block from the `.eval()` line on, never a decorator: a decorator's lines
    # (above the def) are not the lines the finding names.
    torch = torch_name(program)
    statement = program.statement_of(eval_call)
    block = _block_of(program, statement)
    if block is None:
        return None
    following: list[ast.stmt] = []
    for later in block[block.index(statement) + 1 :]:
        if any(
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "train"
            and program.segment(n.func.value) == receiver
            for n in ast.walk(later)
        ):
            break
        following.append(later)
    return wrap_in_with(program, statement, following, f"{torch}.no_grad()")


def _block_of(program: Program, statement: ast.stmt) -> list[ast.stmt] | None:
    parent = program.parents.get(statement)
    if parent is None:
        return None
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and statement in block:
            return block
    return None
