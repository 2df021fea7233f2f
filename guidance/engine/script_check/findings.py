"""What the checker says about a script: findings with their lines, weight and fix, and the
script with the mechanical fixes applied."""

import difflib
import shlex
from dataclasses import dataclass
from enum import StrEnum

from guidance.engine.script_check.parse import Directive, Script, parse_script
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


class Basis(StrEnum):
    """What a finding is read from. A finding that hangs on a program the checker was not given
    is asked as a question, never stated as a fact."""

    SCRIPT = "script"  # the script shows it
    PROGRAM = "program"  # the program the user gave beside the script shows it
    QUESTION = "question"  # it depends on the program, which was not given

    @property
    def label(self) -> str:
        return {
            "script": "From the script",
            "program": "From your program",
            "question": "A question: give the program to settle it",
        }[self.value]


@dataclass(frozen=True)
class Edit:
    """A mechanical fix: `text` replaces line `line` (None removes it), or, with `insert`, goes
    in before it. Line numbers are the original script's, from 1."""

    line: int
    text: str | None
    insert: bool = False
    # What the edit does to an #SBATCH line, so that several edits of one line all apply: the
    # options it takes out, the one it puts in, and a word it rewrites (old, new).
    drop: tuple[str, ...] = ()
    add: str = ""
    swap: tuple[str, str] | None = None

    @property
    def of_options(self) -> bool:
        return bool(self.drop or self.add or self.swap)


@dataclass(frozen=True)
class Finding(Note):
    """A Note about a script: where (its lines), how much it matters, and what to do."""

    severity: Severity = Severity.ADVICE
    lines: tuple[int, ...] = ()
    fix: str = ""  # what to do, in words; the message says what is wrong and why
    edits: tuple[Edit, ...] = ()
    basis: Basis = Basis.SCRIPT


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


def replace_directive(script: Script, directive: Directive, option: str) -> Edit:
    """The directive's option, on its own line, in place of what the directive says."""
    return _rewrite(script, (directive.option,), directive.line, option, (directive.line,))[0]


def swap_word(script: Script, line: int, old: str, new: str) -> Edit:
    """A word of an #SBATCH line written anew: --mem4G -> --mem=4G."""
    return Edit(line, script.line(line).replace(old, new, 1), swap=(old, new))


def written(directive: Directive) -> str:
    """The directive as an #SBATCH line reads it back: a value with spaces or a # quoted."""
    if directive.value is None or shlex.quote(directive.value) == directive.value:
        return str(directive)
    return f"--{directive.option}={shlex.quote(directive.value)}"


def _rewrite(
    script: Script, names: tuple[str, ...], at: int, option: str, only: tuple[int, ...] = ()
) -> tuple[Edit, ...]:
    edits = []
    for number in only or sorted({d.line for d in script.directives if d.option in names}):
        add = option if number == at else ""
        text = _rewritten(script.line(number), names, add)
        edits.append(Edit(number, text, drop=names, add=add))
    return tuple(edits)


def _rewritten(line: str, names: tuple[str, ...], add: str) -> str | None:
    """An #SBATCH line without the named options, the added one in the place of the first of
    them; None when nothing is left. What sbatch refuses on it stays, for its own finding."""
    one = parse_script(line)
    kept: list[str] = []
    for directive in one.directives:
        if directive.option not in names:
            kept.append(written(directive))
        elif add and add not in kept:
            kept.append(add)
    if add and add not in kept:
        kept.append(add)
    kept += [r.written for r in one.refused]
    return f"#SBATCH {' '.join(kept)}" if kept else None


def _merged(line: str, edits: list[Edit]) -> str | None:
    """Every option edit of one line applied: rewritten words first, then options out and in."""
    for edit in edits:
        if edit.swap:
            line = line.replace(*edit.swap, 1)
    result: str | None = line
    for edit in edits:
        if not edit.swap and result is not None:
            result = _rewritten(result, edit.drop, edit.add)
    return result


def apply_edits(text: str, findings: tuple[Finding, ...]) -> str | None:
    """The script with every finding's edits applied; None when no finding has any. Edits of
    the options of one #SBATCH line all apply; otherwise a line replaced by two findings keeps
    the first one's text."""
    edits = [e for f in findings for e in f.edits]
    if not edits:
        return None
    lines = text.split("\n")
    replaced: dict[int, str | None] = {}
    inserted: dict[int, list[str]] = {}
    by_line: dict[int, list[Edit]] = {}
    for edit in edits:
        if edit.insert:
            if edit.text is not None and edit.text not in inserted.get(edit.line, []):
                inserted.setdefault(edit.line, []).append(edit.text)
        else:
            by_line.setdefault(edit.line, []).append(edit)
    for number, found in by_line.items():
        if len(found) > 1 and all(e.of_options for e in found) and 0 < number <= len(lines):
            replaced[number] = _merged(lines[number - 1], found)
        else:
            replaced[number] = found[0].text
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
