"""A training-program check as people read it: the findings in the checker's order, grouped by
kind, each with a link to its line; and each file numbered as Python numbers it, the lines a
finding is about marked in the colour of its expected impact."""

from collections.abc import Mapping
from dataclasses import dataclass

from guidance.engine.code_check import CodeCheck, CodeFinding, Impact


@dataclass(frozen=True)
class ProgramLine:
    number: int
    text: str
    impact: Impact | None  # the most of the findings about the line; None: none is
    rules: tuple[str, ...] = ()


@dataclass(frozen=True)
class FileListing:
    name: str
    anchor: str  # the element id; file names hold characters that ids should not
    lines: tuple[ProgramLine, ...]
    flagged: bool  # a finding is about one of its lines


@dataclass(frozen=True)
class ShownFinding:
    finding: CodeFinding
    where: str  # file:line:column, as editors and linters say it
    href: str  # its line in the listing


@dataclass(frozen=True)
class ProgramResult:
    changes: tuple[ShownFinding, ...]
    questions: tuple[ShownFinding, ...]
    defaults: tuple[ShownFinding, ...]
    listings: tuple[FileListing, ...]
    # False: no file trains or evaluates a model: the lines were checked, the program-wide
    # rules had nothing to look at.
    trains_or_evaluates: bool = True

    @property
    def clean(self) -> bool:
        return not (self.changes or self.questions or self.defaults)


def line_id(anchor: str, number: int) -> str:
    return f"{anchor}-line-{number}"


def program_result(files: Mapping[str, str], check: CodeCheck) -> ProgramResult:
    """The checked files in the checker's order (the entry point first), then any it left out."""
    names = list(dict.fromkeys([*check.files, *files]))
    anchors = {name: f"code-file-{i}" for i, name in enumerate(names, 1)}

    def shown(findings: tuple[CodeFinding, ...]) -> tuple[ShownFinding, ...]:
        return tuple(
            ShownFinding(
                f,
                f"{f.file}:{f.line}:{f.column}",
                "#" + line_id(anchors.get(f.file, "code-file-0"), f.line),
            )
            for f in findings
        )

    return ProgramResult(
        changes=shown(check.changes),
        questions=shown(check.questions),
        defaults=shown(check.defaults),
        listings=tuple(
            _listing(name, anchors[name], files[name], check.findings)
            for name in names
            if name in files
        ),
        trains_or_evaluates=check.trains_or_evaluates,
    )


def _listing(name: str, anchor: str, text: str, findings: tuple[CodeFinding, ...]) -> FileListing:
    about: dict[int, list[CodeFinding]] = {}
    for finding in findings:
        if finding.file == name:
            for number in finding.lines:
                about.setdefault(number, []).append(finding)
    # Python's own line breaks (the parser's numbering): not str.splitlines, which also breaks
    # at form feeds and Unicode separators that a string literal may hold.
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if len(lines) > 1 and not lines[-1]:
        lines.pop()
    out = []
    for number, line in enumerate(lines, 1):
        named = about.get(number, [])
        most = min((f.impact for f in named), key=lambda i: i.rank, default=None)
        out.append(ProgramLine(number, line, most, tuple(dict.fromkeys(f.rule for f in named))))
    return FileListing(name, anchor, tuple(out), bool(about))
