"""The frameworks that run a training loop for the program, found by their calls: Lightning's
Trainer (or Fabric), Hugging Face's Trainer and its TrainingArguments (and the TRL configs built
on them), accelerate's Accelerator. Rules read such a program in the framework's own terms: the
framework's argument, not a DataLoader or a flag, is where a change goes."""

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from guidance.engine.code_check.program import Program

if TYPE_CHECKING:
    from guidance.engine.code_check.context import Project

_LIGHTNING = ("lightning.", "pytorch_lightning.")
_HUGGING_FACE = ("transformers.", "trl.")
# TrainingArguments and its subclasses: they take the same dataloader and precision arguments.
HF_ARGUMENTS = frozenset(
    {
        "TrainingArguments",
        "Seq2SeqTrainingArguments",
        "SFTConfig",
        "DPOConfig",
        "ORPOConfig",
        "KTOConfig",
        "RewardConfig",
        "GRPOConfig",
    }
)


@dataclass(frozen=True)
class Site:
    program: Program
    call: ast.Call


@dataclass
class Frameworks:
    lightning: list[Site] = field(default_factory=list)  # Trainer(...) / Fabric(...)
    hf_arguments: list[Site] = field(default_factory=list)  # TrainingArguments(...) and kin
    hf_trainers: list[Site] = field(default_factory=list)  # Trainer(...), SFTTrainer(...)
    accelerators: list[Site] = field(default_factory=list)  # Accelerator(...)
    trains: bool = False

    @property
    def any(self) -> bool:
        return bool(self.lightning or self.hf_arguments or self.hf_trainers or self.accelerators)

    @property
    def hugging_face(self) -> bool:
        return bool(self.hf_arguments or self.hf_trainers)


def find(project: "Project") -> Frameworks:
    found = Frameworks()
    for program in project.programs:
        for qualname, calls in program.calls_by_name.items():
            last = qualname.rsplit(".", 1)[-1]
            sites = [Site(program, call) for call in sorted(calls, key=_where)]
            if qualname.startswith(_LIGHTNING) and last in ("Trainer", "Fabric"):
                found.lightning += sites
            elif qualname.startswith(_HUGGING_FACE) and last in HF_ARGUMENTS:
                found.hf_arguments += sites
            elif qualname.startswith(_HUGGING_FACE) and last.endswith("Trainer"):
                found.hf_trainers += sites
            elif qualname.startswith("accelerate.") and last == "Accelerator":
                found.accelerators += sites
    if found.lightning:
        found.trains |= any(_on_trainer(p, c) for p, c in project.calls_with_attr("fit"))
    if found.hf_trainers:
        found.trains |= any(_on_trainer(p, c) for p, c in project.calls_with_attr("train"))
    return found


def _where(call: ast.Call) -> tuple[int, int]:
    return call.lineno, call.col_offset


def _on_trainer(program: Program, call: ast.Call) -> bool:
    """`trainer.fit(...)`, `Trainer(...).train()`: a trainer's method, not a model's."""
    if not isinstance(call.func, ast.Attribute):
        return False
    receiver = call.func.value
    if isinstance(receiver, ast.Call):
        return True
    return "trainer" in program.segment(receiver).lower()
