"""Tensors made on the CPU and then copied to the GPU, where they could be made there directly
(003, "No brainer code tweaks")."""

import ast
from collections.abc import Iterator

from guidance.engine.code_check.context import Project, make
from guidance.engine.code_check.findings import CodeFinding, Kind
from guidance.engine.code_check.program import Program
from guidance.engine.code_check.snippets import Edit, apply, keyword_edits, statement_lines
from guidance.engine.code_check.values import Values

FACTORIES = frozenset(
    f"torch.{name}"
    for name in (
        "zeros",
        "ones",
        "rand",
        "randn",
        "randint",
        "randperm",
        "empty",
        "full",
        "arange",
        "eye",
        "linspace",
        "logspace",
        "tensor",
        "zeros_like",
        "ones_like",
        "rand_like",
        "randn_like",
        "randint_like",
        "empty_like",
        "full_like",
    )
)
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
    for move in [*program.calls_by_attr.get("cuda", ()), *program.calls_by_attr.get("to", ())]:
        func = move.func
        if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Call):
            continue
        factory = func.value
        if program.qualname(factory.func) not in FACTORIES:
            continue
        if any(k.arg == "device" for k in factory.keywords):
            continue
        device = _device(program, move)
        if device is None:
            continue
        made = program.segment(factory.func)
        first, last = statement_lines(program, move)
        factory_end = program.end(factory)
        edits = [
            *keyword_edits(program, factory, {"device": device}),
            Edit(factory_end, program.end(move), ""),
        ]
        yield make(
            "tensor_created_then_moved",
            Kind.CHANGE,
            program,
            move,
            f"`{made}(...)` makes the tensor in CPU memory and `.{func.attr}(...)` then copies it "
            "to the GPU: an allocation and a transfer that creating it on the device avoids.",
            f"Pass device={device} to {made} instead of moving the tensor afterwards.",
            apply(program, first, last, edits),
        )


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
