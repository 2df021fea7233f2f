"""What the checker says about a script: findings with their lines, weight and fix, and the
script with the mechanical fixes applied."""

import difflib
from dataclasses import dataclass
from enum import StrEnum

from guidance.engine.script_check.parse import Script
from guidance.engine.types import Note


class Severity(StrEnum):
    """How much a finding matters, most first."""

    FAILS = "fails"  # sbatch refuses the script, or the job cannot do its work
    WASTES = "wastes"  # the job runs, but holds resources it does not use or waits longer
    ADVICE = "advice"  # the guidance asks for it; the job may run fine without it

    @property
    def label(self) -> str:
        return {"fails": "Would fail", "wastes": "Wastes resources", "advice": "Advice"}[self.value]

    @property
    def rank(self) -> int:
        return list(Severity).index(self)


@dataclass(frozen=True)
class Edit:
    """A mechanical fix: `text` replaces line `line` (None removes it), or, with `insert`, goes
    in before it. Line numbers are the original script's, from 1."""

    line: int
    text: str | None
    insert: bool = False


@dataclass(frozen=True)
class Finding(Note):
    """A Note about a script: where (its lines), how much it matters, and what to do."""

    severity: Severity = Severity.ADVICE
    lines: tuple[int, ...] = ()
    fix: str = ""  # what to do, in words; the message says what is wrong and why
    edits: tuple[Edit, ...] = ()


def add_directive(script: Script, option: str) -> Edit:
    """An #SBATCH line for the option, below the script's last one (or its first line)."""
    below = max((d.line for d in script.directives), default=1 if script.shebang else 0)
    return Edit(below + 1, f"#SBATCH {option}", insert=True)


def set_directive(script: Script, names: tuple[str, ...], option: str) -> tuple[Edit, ...]:
    """The option in place of the named ones (sbatch uses the last one given), or added when
    the script gives none. Other options on the same #SBATCH lines stay."""
    found = [d for d in script.directives if d.option in names]
    if not found:
        return (add_directive(script, option),)
    return _rewrite(script, names, found[-1].line, option)


def drop_directives(script: Script, names: tuple[str, ...]) -> tuple[Edit, ...]:
    """The named options taken out of their #SBATCH lines; a line left empty goes."""
    return _rewrite(script, names, 0, "")


def _rewrite(script: Script, names: tuple[str, ...], at: int, option: str) -> tuple[Edit, ...]:
    edits = []
    for number in sorted({d.line for d in script.directives if d.option in names}):
        kept = [str(d) for d in script.directives if d.line == number and d.option not in names]
        kept += [option] if number == at else []
        edits.append(Edit(number, f"#SBATCH {' '.join(kept)}" if kept else None))
    return tuple(edits)


def apply_edits(text: str, findings: tuple[Finding, ...]) -> str | None:
    """The script with every finding's edits applied; None when no finding has any. A line
    replaced by two findings keeps the first one's text."""
    edits = [e for f in findings for e in f.edits]
    if not edits:
        return None
    lines = text.split("\n")
    replaced: dict[int, str | None] = {}
    inserted: dict[int, list[str]] = {}
    for edit in edits:
        if edit.insert:
            if edit.text is not None and edit.text not in inserted.get(edit.line, []):
                inserted.setdefault(edit.line, []).append(edit.text)
        else:
            replaced.setdefault(edit.line, edit.text)
    out: list[str] = []
    for number, line in enumerate(lines, 1):
        out += inserted.get(number, [])
        new = replaced.get(number, line)
        if new is not None:
            out.append(new)
    out += inserted.get(len(lines) + 1, [])
    return "\n".join(out)


def unified_diff(before: str, after: str, name: str = "job.sh") -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            f"{name} (as pasted)",
            f"{name} (fixed)",
        )
    )
