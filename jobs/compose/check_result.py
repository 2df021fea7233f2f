"""A script check as people read it: the script's lines marked where findings point, and the
fixed script's diff line by line. (The checker itself gives the findings worst first.)"""

from collections.abc import Iterable
from dataclasses import dataclass

from guidance.engine.script_check import MAX_CHARS, Finding, Severity


@dataclass(frozen=True)
class Line:
    number: int
    text: str
    severity: Severity | None  # of the worst finding about the line; None: no finding names it
    codes: tuple[str, ...] = ()


def listing(text: str, findings: Iterable[Finding]) -> list[Line]:
    """The checked text, numbered as the checker numbers it (from 1, any line break counts)."""
    named: dict[int, list[Finding]] = {}
    for finding in findings:
        for number in finding.lines:
            named.setdefault(number, []).append(finding)
    lines = text[:MAX_CHARS].replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if len(lines) > 1 and not lines[-1]:
        lines.pop()  # the break that ends the last line starts no line of its own
    out = []
    for number, line in enumerate(lines, 1):
        about = named.get(number, [])
        worst = min((f.severity for f in about), key=lambda s: s.rank, default=None)
        out.append(Line(number, line, worst, tuple(dict.fromkeys(f.code for f in about))))
    return out


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "file" (the two names), "hunk" (@@ ... @@), "added", "removed" or "same"
    text: str


def diff_lines(diff: str) -> list[DiffLine]:
    """A unified diff's lines and what each is. Only the lines before the first hunk name the
    files: a removed line that reads "--x" is shown as "---x" and is still a removed line."""
    out = []
    in_hunk = False
    for line in diff.splitlines():
        if line.startswith("@@"):
            in_hunk = True
            kind = "hunk"
        elif not in_hunk:
            kind = "file"
        else:
            kind = {"+": "added", "-": "removed"}.get(line[:1], "same")
        out.append(DiffLine(kind, line))
    return out
