"""What every rule is given: the program's files (entry first), each with its value reader, the
facts that hold for the whole program (does it train, evaluate, use a GPU; which framework runs
it), the CPUs per GPU to suggest, and what the portal measured; and one way to make a finding."""

import ast
from dataclasses import dataclass, field
from functools import cached_property

from guidance.engine.code_check import devices, frameworks, hydra
from guidance.engine.code_check.catalogue import RULES
from guidance.engine.code_check.configs import ConfigFile
from guidance.engine.code_check.findings import CodeFinding, Kind, Measured
from guidance.engine.code_check.program import Program
from guidance.engine.code_check.snippets import Snippet
from guidance.engine.code_check.values import Values


@dataclass
class Project:
    programs: list[Program]  # entry first, then the others by name
    cpus: int  # the num_workers to suggest: the job's CPUs per GPU, else the cluster's
    measured: Measured | None = None
    configs: list[ConfigFile] = field(default_factory=list)  # YAML given beside, by name
    values: dict[str, Values] = field(default_factory=dict)
    # What several rules ask, found once per check (where program-wide fixes go, a loader's
    # arguments): key -> answer.
    memo: dict[object, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.values = {p.name: Values(p) for p in self.programs}

    @property
    def entry(self) -> Program:
        return self.programs[0]

    def calls_named(self, *qualnames: str) -> list[tuple[Program, ast.Call]]:
        return [(p, c) for p in self.programs for c in p.calls_named(*qualnames)]

    def calls_with_attr(self, *names: str) -> list[tuple[Program, ast.Call]]:
        return [(p, c) for p in self.programs for n in names for c in p.calls_by_attr.get(n, ())]

    @cached_property
    def hydra(self) -> hydra.Composed | None:
        """The config Hydra composes for the program from the YAML given, where it can."""
        return hydra.compose(self.programs, self.configs)

    @cached_property
    def frameworks(self) -> frameworks.Frameworks:
        return frameworks.find(self)

    @cached_property
    def trains(self) -> bool:
        """It calls `.backward(`, an optimizer's `.step(`, or a framework's training entry."""
        if self.calls_with_attr("backward") or self.frameworks.trains:
            return True
        for program, call in self.calls_with_attr("step"):
            receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
            text = program.segment(receiver).lower() if receiver is not None else ""
            if "optim" in text or text.startswith("opt") or text == "scaler":
                return True
        return False

    @cached_property
    def evaluates(self) -> bool:
        """It puts a model in eval mode, generates with one, runs a Hugging Face pipeline or
        turns gradients off: inference."""
        if any(isinstance(c.func, ast.Attribute) for _, c in self.calls_with_attr("generate")):
            return True
        inference = ("transformers.pipeline", "torch.no_grad", "torch.inference_mode")
        if self.calls_named(*inference):
            return True
        return any(
            not call.args and not call.keywords and isinstance(call.func, ast.Attribute)
            for _, call in self.calls_with_attr("eval")
        )

    @cached_property
    def on_gpu(self) -> bool:
        """It names a GPU or any device but the CPU, or a framework places it: a program sent
        to a GPU cluster is taken to run on one unless it keeps to the CPU."""
        return self.frameworks.any or any(devices.names_a_gpu(p) for p in self.programs)

    @property
    def runs_model_on_gpu(self) -> bool:
        return (self.trains or self.evaluates) and self.on_gpu


def make(
    rule: str,
    kind: Kind,
    program: Program,
    node: ast.AST,
    message: str,
    fix: str = "",
    snippet: Snippet | None = None,
) -> CodeFinding:
    """A finding of the catalogue's rule at the node (its first line and column); of a
    compound statement (a class, a loop), about its first line only."""
    info = RULES[rule]
    line = node.lineno
    end_line = getattr(node, "end_lineno", None) or node.lineno
    if hasattr(node, "body"):
        end_line = node.lineno
    if snippet is not None and snippet.first:
        # The lines `before` shows, so that replacing line..end_line with `after` is the fix.
        line, end_line = snippet.first, snippet.last
    return CodeFinding(
        rule=rule,
        kind=kind,
        impact=info.impact,
        file=program.name,
        line=line,
        column=program.column(node),
        end_line=max(line, end_line),
        title=info.title,
        message=message,
        fix=fix,
        before=snippet.before if snippet else "",
        after=snippet.after if snippet else "",
        source=info.source,
    )
