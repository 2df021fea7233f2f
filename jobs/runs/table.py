"""What a sweep's script and its runs.tsv say, read from their text: no database, no cluster."""

import re
from dataclasses import dataclass

from guidance.engine.sweep import MAX_RUNS
from jobs.compose import sweep_script

# The first RESULTS_DEST= line, at the top level of the script: the sweep's own folder. A run's
# RESULTS_DEST, set later inside sweep_run, is indented.
_RESULTS_LINE = re.compile(r"^RESULTS_DEST=(.+)$", re.MULTILINE)
# One piece of a shell word as the script's renderer writes a path (guidance.engine.shell's
# shell_path): "$NAME" or "${NAME}", 'literal', "literal", a bare $NAME, or bare literal text.
_WORD_PIECE = re.compile(
    r'"\$\{?(?P<quoted_var>[A-Za-z_][A-Za-z0-9_]*)\}?"'
    r"|'(?P<single>[^']*)'"
    r'|"(?P<double>[^"$`\\]*)"'
    r"|\$\{?(?P<bare_var>[A-Za-z_][A-Za-z0-9_]*)\}?"
    r"|(?P<bare>[^\s'\"\\$`]+)"
)


@dataclass(frozen=True)
class TableLine:
    """One run's line in runs.tsv: how it ended, as the run itself wrote it."""

    number: int
    folder: str
    exit_code: int | None
    elapsed_seconds: int | None
    job: str  # "<array job id>_<task>" in an array, else the job id
    node: str


def results_folder(script: str) -> list[tuple[str, str]] | None:
    """The sweep's results folder as path parts, ("var", NAME) or ("text", literal), read from
    the script's RESULTS_DEST= line; None when the script has none this reads."""
    found = _RESULTS_LINE.search(script)
    if not found:
        return None
    word, at, parts = found.group(1), 0, []
    while at < len(word):
        piece = _WORD_PIECE.match(word, at)
        if not piece:
            return None  # quoting the renderer never writes: not guessed at
        if name := piece["quoted_var"] or piece["bare_var"]:
            parts.append(("var", name))
        else:
            pieces = (piece["single"], piece["double"], piece["bare"])
            parts.append(("text", next(text for text in pieces if text is not None)))
        at = piece.end()
    return parts or None


def lines_of(text: str, *slurm_ids: str) -> dict[int, TableLine]:
    """The runs that Slurm jobs `slurm_ids` wrote, by run number, from the lines of runs.tsv or
    of .runs/*.tsv. Another job's lines (a re-run, or the same sweep submitted again into the
    same folder) are left out; so are lines that are not a run's (the header, a cut last line)."""
    found: dict[int, TableLine] = {}
    for line in text.splitlines():
        cells = line.split("\t")
        if len(cells) < 2 + len(sweep_script.OUTCOME_COLUMNS) or not cells[0].isdigit():
            continue
        exit_code, elapsed, job, node = cells[-4:]
        if job.partition("_")[0] not in slurm_ids:
            continue
        found[int(cells[0])] = TableLine(
            number=int(cells[0]),
            folder=cells[1],
            exit_code=_number(exit_code),
            elapsed_seconds=_number(elapsed),
            job=job,
            node=node.strip(),
        )
    return found


def _number(cell: str) -> int | None:
    cell = cell.strip()
    return int(cell) if cell.lstrip("-").isdigit() else None


def array_numbers(script: str) -> list[int] | None:
    """The indices of the script's #SBATCH --array= line ("1-6%2", "3,5", "1-9:2"); None for a
    script with no array."""
    found = sweep_script.ARRAY_LINE.search(script)
    if not found:
        return None
    numbers: list[int] = []
    for item in found.group(1).partition("%")[0].split(","):
        span, _, step = item.partition(":")
        first, _, last = span.partition("-")
        if not first.isdigit() or (last and not last.isdigit()) or (step and not step.isdigit()):
            continue
        # An edited script may say 1-99999999: no sweep holds more than MAX_RUNS runs.
        last = min(int(last or first), int(first) + MAX_RUNS)
        numbers += range(int(first), last + 1, int(step or 1))
        if len(numbers) > MAX_RUNS:
            return numbers[: MAX_RUNS + 1]
    return numbers


def grouped_runs(script: str) -> tuple[list[int], int] | None:
    """A grouped sweep's runs in the order it runs them (its SWEEP_RUNS line) and how many each
    job (or array task) runs; None for a sweep that runs one run per array task."""
    found = sweep_script.RUNS_LINE.search(script)
    if not found:
        return None
    numbers = [int(word) for word in found.group(1).split()]
    per = re.search(r"\(group - 1\) \* (\d+)", script)
    return numbers, int(per.group(1)) if per else max(len(numbers), 1)
