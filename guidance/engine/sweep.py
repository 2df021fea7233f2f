"""A sweep: many similar runs of one command, each with its own parameters (001, "Running many
similar jobs": group them into one job rather than submitting each).

The user gives either a grid (parameter names, each with its values: every combination is a
run) or one line of `name=value` pairs per run, and the command with `{name}` placeholders.
Each run gets a number, its values, a folder name that says both (`run-007_lr-0.01_seed-2`,
unique by its number) and its command with the values put in as single shell words. Values are
data, never code: each is quoted where it stands in the command.

How the runs are grouped into Slurm jobs is `plan`'s: one array task per run where a run is long
enough to deserve its own place in the queue, or a few jobs that each run their share of the
runs one after another on their GPUs where the runs are short."""

import math
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import product

from guidance.engine import sources
from guidance.engine.shell import ALWAYS_SET, BASH_OWN, SLURM_JOB_VARIABLES, quote
from guidance.engine.sources import Source

# Slurm's default MaxArraySize is 1001 (indices 0-1000); a sweep stays within it on any site.
MAX_RUNS = 1000
MAX_VALUE_CHARS = 200
# Runs shorter than this are grouped: a job's wait in the queue and its start (staging the data,
# building the environment) would take longer than the run itself, once per run.
SHORT_RUN_MINUTES = 30
# Grouped runs: as many jobs as this at most, each running its share of the runs in turn.
GROUPS = 4
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# `{name}` is a placeholder; `{{` and `}}` are literal braces.
PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
_FOLDER_UNSAFE = re.compile(r"[^A-Za-z0-9.+-]+")
_FOLDER_CHARS = 100
# What the portal's script sets for the program: a parameter may not take one of these names.
RESERVED = frozenset(
    {"DATA_PATH", "DATA_SOURCE", "STAGE_DIR", "RESULTS_DIR", "RESULTS_DEST", "CHECKPOINT_DIR"}
    | {"LAST_CHECKPOINT", "WORK_DIR", "JOB_COMMAND", "RUN_NAME", "RUN_NUMBER", "PATH", "IFS"}
    | {"MASTER_ADDR", "MASTER_PORT", "NNODES", "GPUS_PER_NODE", "WORLD_SIZE", "NODE_RANK"}
    | {"SWEEP_DEST", "SWEEP_RUNS", "SWEEP_CHECKPOINTS", "ENV_DIR", "VENV", "REQUIREMENTS"}
    # The script's own shell variables, which a parameter of that name would overwrite.
    | {"status", "program", "usr1_pending", "other_nodes", "run", "rank", "run_started"}
    | {"run_open", "run_status", "group", "runs", "line", "code", "job", "usr1_seen"}
    | {"RUNS_HEADER", "CHAIN_PART", "run_earlier"}
    # What every program relies on, and the GPUs Slurm gave the job (another value would send
    # the run to GPUs it does not hold, or to none).
    | {"LANG", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"}
    | {"GPU_DEVICE_ORDINAL"}
    # What torchrun (and srun) set in each process it starts, over the run's own value.
    | {"RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK", "ROLE_WORLD_SIZE"}
    | BASH_OWN
    | ALWAYS_SET
    | SLURM_JOB_VARIABLES
)


class SweepError(ValueError):
    """What is wrong with the sweep as given, in words for the field it belongs to."""

    def __init__(self, message: str, field: str = "sweep"):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Run:
    number: int  # from 1, as the array index that runs it
    values: tuple[tuple[str, str], ...]  # (name, value) in the sweep's order of names
    folder: str  # run-007_lr-0.01_seed-2: its results, checkpoints and log live under this


@dataclass(frozen=True)
class Sweep:
    names: tuple[str, ...]
    runs: tuple[Run, ...]
    command: str  # with its placeholders

    def command_for(self, run: Run) -> str:
        """The run's command: each placeholder replaced by its value as one shell word."""
        values = dict(run.values)

        def put(found: re.Match) -> str:
            if found.group(1) is None:
                return found.group()[0]  # {{ or }}
            return quote(values[found.group(1)])

        return PLACEHOLDER.sub(put, self.command)


def from_grid(grid: Mapping[str, Sequence[str]], command: str) -> Sweep:
    """Every combination of the values, the last name's varying fastest (as nested loops)."""
    names = tuple(grid)
    if not names:
        raise SweepError("Give at least one parameter with its values.")
    _check_names(names)
    for name in names:
        if not grid[name]:
            raise SweepError(f"{name} has no values: give at least one.")
        for value in grid[name]:
            _check_value(name, value)
        if twice := sorted({v for v in grid[name] if list(grid[name]).count(v) > 1}):
            raise SweepError(
                f"{name} gives {', '.join(map(repr, twice))} more than once, which would make "
                "the same run again: give each value once (for repeats of one command, set "
                "Runs of the same command)."
            )
    count = math.prod(len(grid[name]) for name in names)
    if count > MAX_RUNS:
        raise SweepError(_too_many(count))
    combinations = product(*(grid[name] for name in names))
    return _sweep(names, [tuple(zip(names, c, strict=True)) for c in combinations], command)


def grid_from_text(text: str) -> dict[str, list[str]]:
    """One parameter per line, `name = values` (or `name: values`), the values as shell words
    separated by spaces or commas: `lr = 0.1, 0.01` and `model: resnet50 'vit b'`."""
    grid: dict[str, list[str]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        found = re.match(r"\s*([^=:\s]+)\s*[=:](.*)", line)
        if not found:
            raise SweepError(f"Line {number}: write the parameter's name, =, then its values.")
        name, rest = found.groups()
        if name in grid:
            raise SweepError(f"{name} is given twice.")
        try:
            grid[name] = _values_of(rest)
        except ValueError as error:
            raise SweepError(f"Line {number}: {error} (a quote is not closed).") from error
    return grid


def grid_word(value: str) -> str:
    """`value` as grid_from_text reads it back: a shell word, quoted where it holds a comma."""
    word = shlex.quote(value)
    return f"'{word}'" if "," in word and not word.startswith("'") else word


def _values_of(text: str) -> list[str]:
    """Shell words separated by spaces or commas outside quotes: `0.1,0.01` is two values,
    `'a, b'` one; a # that starts a word starts a comment, as in a shell."""
    words = shlex.shlex(_without_comment(text), posix=True)
    words.whitespace += ","
    words.whitespace_split = True
    words.commenters = ""
    return list(words)


def _without_comment(text: str) -> str:
    """The text up to a # that starts a word outside quotes (`lr = 1 2  # the rates`); a # in
    a word (a#b), quoted or escaped is the value's own."""
    quote, at, start = "", 0, True
    while at < len(text):
        char = text[at]
        if char == "\\" and quote != "'":
            at, start = at + 2, False
            continue
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and start:
            return text[:at]
        start = not quote and char in " \t,"
        at += 1
    return text


def repeats(count: int, command: str) -> Sweep:
    """`count` runs of the same command, each with its own number and folders (run-001, ...):
    the command tells them apart by $RUN_NUMBER, if it needs to."""
    if count > MAX_RUNS:
        raise SweepError(_too_many(count), "similar_runs")
    return _sweep((), [()] * count, command)


def from_lines(text: str, command: str) -> Sweep:
    """One run per line, as `name=value` words (quoted as in a shell: lr=0.01 tag='a b');
    blank lines and lines starting with # are skipped. Every line names the same parameters."""
    rows: list[tuple[tuple[str, str], ...]] = []
    names: tuple[str, ...] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            words = shlex.split(line)
        except ValueError as error:
            raise SweepError(f"Line {number}: {error} (a quote is not closed).") from error
        pairs = []
        for word in words:
            name, equals, value = word.partition("=")
            if not equals:
                raise SweepError(f"Line {number}: {word!r} is not name=value.")
            pairs.append((name, value))
        these = tuple(name for name, _ in pairs)
        if names is None:
            names = these
            _check_names(names)
        elif set(these) != set(names) or len(these) != len(names):
            raise SweepError(
                f"Line {number} names {', '.join(these)}; the first run names "
                f"{', '.join(names)}: every run gives the same parameters."
            )
        for name, value in pairs:
            _check_value(name, value)
        order = dict(pairs)
        row = tuple((name, order[name]) for name in names)
        if row in rows:
            raise SweepError(
                f"Line {number} gives the same values as line {_line_of(text, rows.index(row))}"
                ": each run once (for repeats of one command, set Runs of the same command)."
            )
        rows.append(row)
        if len(rows) > MAX_RUNS:
            raise SweepError(_too_many(len(rows)))
    if names is None:
        raise SweepError("Give one line per run, e.g. lr=0.01 seed=1.")
    return _sweep(names, rows, command)


def _line_of(text: str, run_index: int) -> int:
    """The line number of the run_index-th run in the text (blank and # lines skipped)."""
    runs = [n for n, line in enumerate(text.splitlines(), start=1)
            if line.strip() and not line.lstrip().startswith("#")]  # fmt: skip
    return runs[run_index]


def _sweep(names: tuple[str, ...], rows: list, command: str) -> Sweep:
    used = {found.group(1) for found in PLACEHOLDER.finditer(command) if found.group(1)}
    unknown = sorted(used - set(names))
    if unknown:
        raise SweepError(
            f"The command names {{{unknown[0]}}}, which is not a parameter of the sweep: add it, "
            "or write {{ and }} for braces the command needs as they are.",
            "command",
        )
    digits = max(3, len(str(len(rows))))
    runs = tuple(
        Run(number, values, _folder(number, digits, values))
        for number, values in enumerate(rows, start=1)
    )
    return Sweep(names, runs, command)


def _folder(number: int, digits: int, values: tuple[tuple[str, str], ...]) -> str:
    """run-007_lr-0.01_seed-2: safe on any file system, unique by its number, cut short where the
    values are long (the full values are in runs.tsv)."""
    words = [f"run-{number:0{digits}d}"]
    words += [
        f"{name}-{_FOLDER_UNSAFE.sub('_', value).strip('_') or '_'}" for name, value in values
    ]
    return "_".join(words)[:_FOLDER_CHARS].rstrip("_-.")


def _check_names(names: tuple[str, ...]) -> None:
    seen = set()
    for name in names:
        if not NAME.fullmatch(name):
            raise SweepError(
                f"{name!r} is not a parameter name: use letters, digits and _, not starting "
                "with a digit (it is exported to the run as a variable of that name)."
            )
        if name in RESERVED or name.startswith(("SLURM_", "SLURMD_", "BASH")):
            raise SweepError(f"{name} is the job's own variable: give the parameter another name.")
        if name in seen:
            raise SweepError(f"{name} is given twice.")
        seen.add(name)


def _check_value(name: str, value: str) -> None:
    if not isinstance(value, str):
        raise SweepError(f'{name}\'s values are text: write {value!r} as "{value}".')
    if not value:
        raise SweepError(f"{name} has an empty value: give each value, or leave it out.")
    # Also the line breaks of unicode (U+2028...), which a text of lines splits at.
    if any(ord(c) < 32 or ord(c) == 127 for c in value) or value.splitlines() != [value]:
        raise SweepError(f"{name}'s value {value!r} holds a control character or a line break.")
    if len(value) > MAX_VALUE_CHARS:
        raise SweepError(f"{name} has a value longer than {MAX_VALUE_CHARS} characters.")


def _too_many(count: int) -> str:
    return (
        f"{count:,} runs: more than the {MAX_RUNS:,} one job array can hold. Split the sweep, or "
        "search it with fewer values (a random or Bayesian search tries fewer combinations)."
    )


class Grouping(StrEnum):
    ARRAY = "array"  # one array task per run
    GROUPED = "grouped"  # a few jobs, each running its share of the runs in turn


@dataclass(frozen=True)
class Plan:
    grouping: Grouping
    jobs: int  # array tasks, or grouped jobs
    runs_per_job: int
    minutes_per_job: int  # each job's time limit, from the runs it holds
    gpu_hours: float  # the whole sweep's, as asked
    reason: str
    source: Source


def plan(
    sweep: Sweep,
    minutes_per_run: int,
    gpus_per_run: int,
    at_once: int = 0,
    max_minutes: int = 24 * 60,
    one_node: bool = True,
) -> Plan:
    """`at_once`: the most jobs the user (or the site) lets run at the same time, 0 for no cap.
    `max_minutes`: the longest a grouped job may run (the partition's limit, or less).
    A run on several nodes is never grouped: its own array task starts it on its nodes."""
    runs = len(sweep.runs)
    gpu_hours = round(runs * minutes_per_run * gpus_per_run / 60, 2)
    cap = f", at most {at_once} at a time (%{at_once})" if at_once else ""
    if minutes_per_run >= SHORT_RUN_MINUTES or runs == 1 or not one_node:
        return Plan(
            Grouping.ARRAY,
            runs,
            1,
            minutes_per_run,
            gpu_hours,
            f"{_runs(runs)} of {_duration(minutes_per_run)} each: one job array, a task per "
            f"run{cap}, so that each run waits in the queue only for its own GPUs and a failed "
            "run can be run again alone.",
            sources.SIMILAR_JOBS,
        )
    # As few jobs as the time limit allows: one, where all the runs fit in it.
    per_job = max(1, min(runs, max_minutes // minutes_per_run))
    jobs = math.ceil(runs / per_job)
    per_job = math.ceil(runs / jobs)  # 5 runs in 2 jobs: 3 and 2, not 4 and 1
    what = "one job" if jobs == 1 else f"{jobs} jobs (an array{cap})"
    return Plan(
        Grouping.GROUPED,
        jobs,
        per_job,
        per_job * minutes_per_run,
        gpu_hours,
        f"{runs} runs of {minutes_per_run} min each are short: {what} running "
        f"{per_job} of them one after another on the same GPUs spends the queue's wait, the "
        "data's staging and the environment's start once, not once per run (under "
        f"{SHORT_RUN_MINUTES} min a run would wait and start longer than it works).",
        sources.SIMILAR_JOBS,
    )


def _runs(count: int) -> str:
    return "1 run" if count == 1 else f"{count} runs"


def _duration(minutes: int) -> str:
    return f"{minutes} min" if minutes < 120 else f"{minutes / 60:g} h"


def groups(runs: Sequence[int], per_job: int) -> list[list[int]]:
    """The runs each grouped job runs, in order: the first `per_job`, then the next ..."""
    return [list(runs[i : i + per_job]) for i in range(0, len(runs), per_job)]
