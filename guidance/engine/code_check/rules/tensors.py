"""Tensors made on the CPU and then copied to the GPU, where they could be made there directly
(003, "No brainer code tweaks"): moved as made, after arithmetic and dtype or shape changes, or
as a helper function returns them."""

import ast
from collections.abc import Iterator

from guidance.engine.code_check.context import Project, make
from guidance.engine.code_check.findings import CodeFinding, Kind
from guidance.engine.code_check.made_on_cpu import Helpers, Origin, origin
from guidance.engine.code_check.program import Program
from guidance.engine.code_check.snippets import (
    Edit,
    Snippet,
    apply,
    keyword_edits,
    statement_lines,
)
from guidance.engine.code_check.values import Values

# torch's dtypes: `.to(torch.float16)` changes the type, it does not move the tensor.
DTYPES = frozenset(
    {
        "float",
        "float16",
        "float32",
        "float64",
        "half",
        "double",
        "bfloat16",
        "int",
        "int8",
        "int16",
        "int32",
        "int64",
        "long",
        "short",
        "uint8",
        "bool",
        "complex64",
        "complex128",
        "cfloat",
        "channels_last",
    }
)


def check_tensor_created_then_moved(
    project: Project, program: Program, values: Values
) -> Iterator[CodeFinding]:
    helpers = project.memo.get(Helpers)
    if helpers is None:
        helpers = project.memo[Helpers] = Helpers(project.programs)
    for move in [*program.calls_by_attr.get("cuda", ()), *program.calls_by_attr.get("to", ())]:
        func = move.func
        if not isinstance(func, ast.Attribute):
            continue
        made = origin(program, func.value, helpers)  # type: ignore[arg-type]
        if made is None:
            continue
        device = _device(program, move)
        if device is None:
            continue
        yield _finding(program, move, made, device)


def _finding(program: Program, move: ast.Call, made: Origin, device: str) -> CodeFinding:
    func = move.func
    names = sorted({(made.helper_program or program).segment(f.func) for f in made.factories})
    factories = " and ".join(f"`{name}(...)`" for name in names)
    moved = f"`.{func.attr}(...)`"  # type: ignore[attr-defined]
    first, last = statement_lines(program, move)
    if made.helper is not None:
        helper = made.helper.name
        where = made.helper_program.name if made.helper_program is not program else "this file"
        return make(
            "tensor_created_then_moved",
            Kind.CHANGE,
            program,
            move,
            f"`{helper}` ({where}, line {made.helper.lineno}) makes its tensor with "
            f"{factories} in CPU memory and {moved} then copies it to the GPU: an allocation "
            "and a transfer that creating it on the device avoids.",
            f"Give `{helper}` a device parameter, pass device=device to {' and '.join(names)} "
            f"inside it, and call `{helper}(..., device={device})` here instead of moving "
            "its result (its other callers keep the CPU with device=None).",
            Snippet(program.line_text(first, last), "", first, last),
        )
    if made.local is not None:
        local = made.local.id
        made_at = made.factories[0].lineno
        return make(
            "tensor_created_then_moved",
            Kind.CHANGE,
            program,
            move,
            f"`{local}` is made with {factories} in CPU memory (line {made_at}) and {moved} "
            "then copies it to the GPU: an allocation and a transfer that creating it on the "
            "device avoids.",
            f"Pass device={device} to {' and '.join(names)} where `{local}` is made (line "
            f"{made_at}) and use it without moving it, unless something in between needs "
            "it in CPU memory.",
            Snippet(program.line_text(first, last), "", first, last),
        )
    message = (
        f"{factories} makes the tensor in CPU memory and {moved} then copies it to the GPU: "
        "an allocation and a transfer that creating it on the device avoids."
    )
    if made.factories != (func.value,):  # type: ignore[attr-defined]
        message = (
            f"{factories} makes the tensor in CPU memory, the operations on it run there, and "
            f"{moved} then copies the result to the GPU: made on the device, all of it runs "
            "there and nothing is copied."
        )
    fix = f"Pass device={device} to {' and '.join(names)} instead of moving the tensor afterwards."
    if made.leaf:
        fix += (
            " It asks for requires_grad: made on the device, it is itself the leaf that gets "
            "gradients, where now its CPU original does; give the optimizer that tensor."
        )
    elif made.unplaced:
        shown = ", ".join(f"`{program.segment(part)}`" for part in made.unplaced[:3])
        fix += (
            f" Only where {shown} {'is a number' if len(made.unplaced) == 1 else 'are numbers'} "
            "or already on that device: a CPU tensor would then meet a GPU one and raise."
        )
    edits = _edits(program, move, made, device) if made.safe else None
    if edits is None:
        snippet = Snippet(program.line_text(first, last), "", first, last)
    else:
        snippet = apply(program, first, last, edits)
    return make("tensor_created_then_moved", Kind.CHANGE, program, move, message, fix, snippet)


def _edits(program: Program, move: ast.Call, made: Origin, device: str) -> list[Edit] | None:
    """device= on each factory, the move dropped, and the parentheses that only grouped the
    expression for the move where the expression stands alone (an assignment, an argument)."""
    receiver = move.func.value  # type: ignore[attr-defined]
    closing = _closing_parentheses(program, receiver)
    if closing is None or any(k.arg is None for f in made.factories for k in f.keywords):
        return None  # a `**kw` spread may hold a device already: device= twice would raise
    after_parens, count = closing
    edits = [e for f in made.factories for e in keyword_edits(program, f, {"device": device})]
    parent = program.parents.get(move)
    alone = isinstance(parent, _ALONE) or (isinstance(parent, ast.Call) and move in parent.args)
    if count and alone:
        start = program.start(move)
        edits += [
            Edit(start, program.start(receiver), ""),
            Edit(program.end(receiver), program.end(move), ""),
        ]
    else:
        edits.append(Edit(after_parens, program.end(move), ""))
    return edits


_ALONE = (ast.Assign, ast.AnnAssign, ast.Return, ast.keyword, ast.Expr)


def _closing_parentheses(program: Program, receiver: ast.AST) -> tuple[tuple[int, int], int] | None:
    """Where the `)`s that close parentheses around the receiver end, and how many there are;
    None where anything else (a comment, a line break) stands between it and `.to`."""
    line, column = program.end(receiver)
    text = program.lines[line - 1]
    count = 0
    while column < len(text) and text[column] in " )":
        count += text[column] == ")"
        column += 1
    if column >= len(text) or text[column] != ".":
        return None
    while column > 0 and text[column - 1] == " ":
        column -= 1
    return (line, column), count


def _device(program: Program, move: ast.Call) -> str | None:
    """The device the tensor is moved to, as the program writes it; None where the call is not
    a move to a device (a dtype change, other arguments)."""
    attr = move.func.attr  # type: ignore[attr-defined]
    if attr == "cuda":
        if not move.args and not move.keywords:
            return '"cuda"'
        if len(move.args) != 1 or move.keywords:
            return None
        device = move.args[0]
        if isinstance(device, ast.Constant):  # .cuda(0)
            index = device.value
            return f'"cuda:{index}"' if isinstance(index, int) else None
        return program.segment(device)  # .cuda(local_rank): an index is a CUDA device
    given = [k.value for k in move.keywords if k.arg == "device"] + list(move.args[:1])
    others = [k for k in move.keywords if k.arg not in ("device", "non_blocking")]
    if len(given) != 1 or others or len(move.args) > 1:
        return None
    device = given[0]
    qualname = program.qualname(device) or ""
    if qualname.startswith("torch.") and qualname.rsplit(".", 1)[-1] in DTYPES:
        return None
    if isinstance(device, ast.Constant) and not (
        isinstance(device.value, str) and device.value.startswith("cuda")
    ):
        return None  # .to("cpu") stays on the CPU; .to(0) is a dtype-less oddity
    return program.segment(device) if _clearly_a_device(program, device) else None


def _clearly_a_device(program: Program, node: ast.AST) -> bool:
    """A "cuda" string, torch.device(...), a `.device` attribute, a name that says device
    (`device`, `dev`, `gpu`, `local_rank`): `.to(other_tensor)` takes the other tensor's
    dtype and device, and device=other_tensor would fail."""
    if isinstance(node, ast.Constant):
        return True  # only "cuda..." strings get here
    if isinstance(node, ast.Call):
        node = node.func  # torch.device("cuda"), torch.cuda.current_device()
    name = getattr(node, "attr", None) or getattr(node, "id", None) or ""
    return any(word in name.lower() for word in _DEVICE_WORDS)


_DEVICE_WORDS = ("device", "dev", "gpu", "cuda", "rank")
