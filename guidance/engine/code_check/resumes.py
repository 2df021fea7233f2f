"""Whether a program picks up where an earlier run stopped, read from its files.

A chain of jobs (`--array=1-N%1`), a requeued job or one warned by `--signal` only saves work
when the program, started again, loads what the last part saved. The script checker asks this
of the program behind the script. Any load of saved state counts (a state dict, a Lightning or
Hugging Face resume, accelerate's saved state, a TensorFlow checkpoint): loading pretrained
weights reads as resuming too, so the answer errs towards quiet.
"""

import ast
from dataclasses import dataclass

from guidance.engine.code_check.program import Program

LOADING_CALLS = (
    "torch.load",
    "safetensors.torch.load_file",
    "tensorflow.keras.models.load_model",
    "keras.models.load_model",
    "orbax.checkpoint.CheckpointManager",
    "flax.training.checkpoints.restore_checkpoint",
)
# Methods by their last name: objects whose class the file does not show.
LOADING_METHODS = frozenset(
    {"load_state_dict", "load_from_checkpoint", "load_state", "restore", "load_checkpoint"}
)
# Keywords that hand a framework the checkpoint to resume from.
RESUME_KEYWORDS = frozenset({"ckpt_path", "resume_from_checkpoint"})


@dataclass(frozen=True)
class Resume:
    """Where the program loads saved state: the file, its line and the call."""

    file: str
    line: int
    call: str


def resumes(programs: tuple[Program, ...]) -> Resume | None:
    """The first place in the program that loads saved state, or None when no file does."""
    return next(filter(None, map(_in_program, programs)), None)


def _in_program(program: Program) -> Resume | None:
    if calls := program.calls_named(*LOADING_CALLS):
        return Resume(program.name, calls[0].lineno, program.qualname(calls[0].func) or "load")
    for method in LOADING_METHODS:
        if calls := program.calls_by_attr.get(method):
            return Resume(program.name, calls[0].lineno, method)
    for keyword in program.by_type[ast.keyword]:
        if keyword.arg in RESUME_KEYWORDS and not _none_or_false(keyword.value):
            return Resume(program.name, keyword.value.lineno, keyword.arg)
    return None


def _none_or_false(value: ast.AST) -> bool:
    return isinstance(value, ast.Constant) and value.value in (None, False)
