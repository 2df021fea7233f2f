"""What the training-code checker says: findings tied to a file, line and column, with the
document's advice, the fix in the program's own names, and its source."""

from dataclasses import dataclass
from enum import StrEnum

from guidance.engine.sources import Source


class Impact(StrEnum):
    """How much a change is expected to raise GPU utilization, most first."""

    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"

    @property
    def label(self) -> str:
        return {"high": "High impact", "medium": "Medium impact", "low": "Low impact"}[self.value]

    @property
    def rank(self) -> int:
        return list(Impact).index(self)


class Kind(StrEnum):
    """A change to make; a question where the code does not say the value (a command-line
    argument, a config file); or advice that current PyTorch already follows by default."""

    CHANGE = "change"
    QUESTION = "question"
    DEFAULT = "default"


@dataclass(frozen=True)
class CodeFinding:
    rule: str  # the catalogue's key, e.g. "dataloader_num_workers"
    kind: Kind
    impact: Impact
    file: str
    line: int  # from 1
    column: int  # from 1, as editors count
    end_line: int  # the last line of the code it is about (== line for one line)
    title: str  # the rule's title
    message: str  # what the program does, what the document says, why it matters for the GPU
    fix: str = ""  # what to do, in words
    before: str = ""  # the program's own lines as they are
    after: str = ""  # the same lines changed; "" where no mechanical change applies
    source: Source | None = None

    @property
    def lines(self) -> range:
        return range(self.line, self.end_line + 1)


@dataclass(frozen=True)
class Unreadable:
    """A file the checker cannot read: not Python (with the line of the syntax error), binary,
    or over a size limit. The message is for people and names the file."""

    file: str
    message: str
    line: int | None = None


@dataclass(frozen=True)
class Measured:
    """What the portal measured of the job running the program, so that findings say it and
    never invent a speed-up."""

    mean_utilization: float  # % over the measured span
    minutes: float  # how long that span was
    gpus: int = 1
    peak_memory_gb: float | None = None  # the most any of its GPUs held
    memory_total_gb: float | None = None  # what one of its GPUs has

    def __str__(self) -> str:
        which = "GPU" if self.gpus == 1 else f"{self.gpus} GPUs"
        return f"{which} at {self.mean_utilization:.0f} % for {self.minutes:.0f} min"


@dataclass(frozen=True)
class CodeCheck:
    findings: tuple[CodeFinding, ...] = ()  # changes by impact, then entry first, then line
    unreadable: tuple[Unreadable, ...] = ()
    files: tuple[str, ...] = ()  # the files read, entry first
    # False: no file trains or evaluates a model. A note, not a switch: every file's lines were
    # still checked, but the program-wide rules (mixed precision, TF32, torch.compile...) had
    # no training to look at, so "nothing to change" would be a claim the check cannot make.
    trains_or_evaluates: bool = True

    @property
    def changes(self) -> tuple[CodeFinding, ...]:
        return tuple(f for f in self.findings if f.kind is Kind.CHANGE)

    @property
    def questions(self) -> tuple[CodeFinding, ...]:
        return tuple(f for f in self.findings if f.kind is Kind.QUESTION)

    @property
    def defaults(self) -> tuple[CodeFinding, ...]:
        return tuple(f for f in self.findings if f.kind is Kind.DEFAULT)
