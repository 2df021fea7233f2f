"""Where a program runs, as a GPU cluster sees it. A program sent to this portal is meant for a
GPU, so one that names any device but the CPU is taken to run on one: CUDA, the accelerator API
(`torch.accelerator.current_accelerator()`, the pytorch/examples idiom), a distributed backend, a
device that comes from the command line or from a call. Only a program whose every device is a
literal "cpu" (or that names none at all) is left alone."""

import ast

from guidance.engine.code_check.program import Program

# Attributes that only a GPU program uses: torch.cuda, .cuda(), multi-GPU wrappers.
_GPU_ATTRIBUTES = frozenset({"cuda", "DistributedDataParallel", "DataParallel"})
_GPU_WORDS = ("cuda", "gpu", "nccl")
# A name or `self.x` holds a device made elsewhere in the program (and read there): such a
# reference names no device of its own, nor does a tensor's or module's `.device`.
_PASSED_ON = (ast.Name, ast.Starred)
# ...but `args.device`, `cfg.device` come from the command line or a config: any device at all.
_SETTINGS_WORDS = ("arg", "opt", "cfg", "conf", "param", "setting", "flag")


def names_a_gpu(program: Program) -> bool:
    """The file names a GPU, the accelerator, or a device that is not the CPU."""
    attributes = program.attributes
    if any(name in attributes for name in _GPU_ATTRIBUTES):
        return True
    if any(program.qualname(n) == "torch.accelerator" for n in attributes.get("accelerator", ())):
        return True
    for node in program.by_type[ast.Constant]:
        value = node.value
        if isinstance(value, str) and (value.startswith("cuda") or value in _GPU_WORDS):
            return True
    return any(not _on_cpu(program, device) for device in _devices(program))


def _devices(program: Program):
    """Every expression the file gives as a device: torch.device(x)'s x, a `device=` argument,
    `.to("...")`, and what a name ending in `device` is assigned."""
    for keyword in program.by_type[ast.keyword]:
        if keyword.arg == "device_map":  # Hugging Face places the model: "auto" is the GPUs
            yield keyword.value if isinstance(keyword.value, ast.Constant) else keyword
        elif keyword.arg == "device":
            yield keyword.value
    for call in program.calls_by_attr.get("to", ()):
        if call.args and isinstance(call.args[0], ast.Constant):
            yield call.args[0]
    for call in program.calls_named("torch.device"):
        yield call
    for node in program.by_type[ast.Assign]:
        for target in node.targets:
            name = getattr(target, "id", None) or getattr(target, "attr", None) or ""
            if name.lower().endswith("device"):
                yield node.value


def _on_cpu(program: Program, device: ast.AST) -> bool:
    """The device is the CPU, or the expression passes on a device named elsewhere."""
    if isinstance(device, ast.Constant):
        value = device.value
        return value is None or (isinstance(value, str) and value.split(":")[0] == "cpu")
    if isinstance(device, _PASSED_ON):
        return True
    if isinstance(device, ast.Attribute):
        owner = device.value
        if isinstance(owner, ast.Name) and owner.id == "self":
            return True
        settings = program.segment(owner).lower()
        return device.attr == "device" and not any(w in settings for w in _SETTINGS_WORDS)
    if isinstance(device, ast.Call) and program.qualname(device.func) == "torch.device":
        given = device.args[:1] or [k.value for k in device.keywords if k.arg == "type"]
        return bool(given) and _on_cpu(program, given[0])
    return False
