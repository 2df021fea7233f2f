"""Values that several Slurm commands print (durations, times, sizes, host lists, job ids), and
the `|`-separated rows they come in."""

import csv
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from guidance.engine.slurm_time import parse_seconds

# Slurm reads and prints times in the TZ of its caller; a cluster's zone is none of our business.
IN_UTC = ["env", "TZ=UTC"]


class SlurmParseError(ValueError):
    """Slurm printed something these parsers do not understand."""


# Words Slurm prints where a value is absent or not known yet.
NO_VALUE = frozenset({"", "N/A", "NONE", "None", "(null)", "Unknown", "INVALID", "None assigned"})


def no_value_as_empty(text: str) -> str:
    return "" if text.strip() in NO_VALUE else text


def parse_duration(text: str) -> timedelta | None:
    """`1-02:03:04`, `02:03:04`, `03:04`, `00:00.005` -> timedelta.

    None for UNLIMITED, Partition_Limit (the job has no limit of its own), INVALID and N/A:
    callers that need to tell "no limit" from "unknown" look at the text first.
    """
    text = text.strip()
    if text in NO_VALUE or text in {"UNLIMITED", "Partition_Limit"}:
        return None
    # squeue and sacct always print a clock: a bare number or D-HH is sbatch's input, not theirs.
    if ":" not in text:
        raise SlurmParseError(f"not a Slurm duration: {text!r}")
    try:
        seconds = parse_seconds(text, fractions=True)
    except ValueError as error:
        raise SlurmParseError(str(error)) from None
    if math.isinf(seconds):
        return None
    return timedelta(seconds=seconds)


def duration_hours(text: str) -> float | None:
    duration = parse_duration(text)
    return None if duration is None else duration.total_seconds() / 3600


def parse_timestamp(text: str) -> datetime | None:
    """`2026-11-22T04:00:00` -> naive datetime (UTC under IN_UTC); None for Unknown, N/A."""
    text = text.strip()
    if text in NO_VALUE:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise SlurmParseError(f"not a Slurm timestamp: {text!r}") from None


_MEMORY = re.compile(r"(?P<number>\d+(?:\.\d+)?)(?P<unit>[KMGTP]?)[cn]?")
_MEGABYTES_PER_UNIT = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024**2, "P": 1024**3}


def parse_memory_mb(text: str) -> float | None:
    """`500M`, `1.50G`, `2048K` -> megabytes (MiB, as Slurm counts). A bare number is MB.

    None for an empty field (sacct's MaxRSS of a job that ran no accounted step).
    """
    text = text.strip()
    if text in NO_VALUE:
        return None
    match = _MEMORY.fullmatch(text)
    if not match:
        raise SlurmParseError(f"not a Slurm memory size: {text!r}")
    return float(match["number"]) * _MEGABYTES_PER_UNIT[match["unit"]]


def parse_tres(text: str) -> dict[str, str]:
    """`cpu=1,mem=500M,gres/gpu:a100=1` -> {"cpu": "1", "mem": "500M", "gres/gpu:a100": "1"}."""
    tres = {}
    for item in text.strip().split(","):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep:
            raise SlurmParseError(f"not a TRES list: {text!r}")
        tres[key] = value
    return tres


@dataclass(frozen=True)
class Gres:
    """One generic resource of a node: `gpu:a100:2` (name, type, count)."""

    name: str
    type: str  # "" when the site does not type its GPUs
    count: int


# gpu:a100:2, gpu:2, gpu:a100:2(S:0-1), gpu:a100:2(IDX:0-1) (sinfo's %b)
_GRES = re.compile(r"(?P<name>[^:(]+)(?::(?P<type>[^:(]+))?:(?P<count>\d+)(?:\(.*\))?")


def parse_gres(text: str) -> tuple[Gres, ...]:
    """sinfo's %G: `gpu:a100:2`, `gpu:a100:2(S:0-1),shard:8`, `(null)` -> Gres tuples."""
    text = text.strip()
    if text in NO_VALUE:
        return ()
    items = []
    for item in _split_outside_parentheses(text):
        match = _GRES.fullmatch(item)
        if not match:
            raise SlurmParseError(f"not a GRES: {item!r}")
        items.append(Gres(match["name"], match["type"] or "", int(match["count"])))
    return tuple(items)


def _split_outside_parentheses(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return [part for part in parts if part]


_HOSTLIST_PART = re.compile(r"([^,\[]+)(?:\[([^\]]+)\])?([^,\[]*)")


def expand_hostlist(text: str) -> list[str]:
    """`a100-[1-2],rtx-1` -> ["a100-1", "a100-2", "rtx-1"]; [] for `None assigned` or empty.

    One bracket per name, as Slurm prints node names (`n[01-03]` keeps its zero padding).
    """
    text = text.strip()
    if text in NO_VALUE:
        return []
    names = []
    position = 0
    while position < len(text):
        match = _HOSTLIST_PART.match(text, position)
        if not match:
            raise SlurmParseError(f"not a Slurm host list: {text!r}")
        prefix, ranges, suffix = match.groups()
        if ranges is None:
            names.append(prefix + suffix)
        else:
            for piece in ranges.split(","):
                low, _, high = piece.partition("-")
                if not low.isdigit() or (high and not high.isdigit()):
                    raise SlurmParseError(f"not a Slurm host list: {text!r}")
                width = len(low)
                for number in range(int(low), int(high or low) + 1):
                    names.append(f"{prefix}{number:0{width}d}{suffix}")
        position = match.end()
        if position < len(text):
            if text[position] != ",":
                raise SlurmParseError(f"not a Slurm host list: {text!r}")
            position += 1
    return names


@dataclass(frozen=True)
class ExitCode:
    """sacct's `code:signal`: `3:0` exited 3; `0:15` killed by SIGTERM."""

    code: int
    signal: int

    @classmethod
    def parse(cls, text: str) -> "ExitCode | None":
        text = text.strip()
        if text in NO_VALUE:
            return None
        code, sep, signal = text.partition(":")
        if not (sep and code.isdigit() and signal.isdigit()):
            raise SlurmParseError(f"not an exit code: {text!r}")
        return cls(int(code), int(signal))


def read_rows(text: str, columns: tuple[str, ...]) -> Iterator[dict[str, str]]:
    """`|`-separated lines -> dicts; extra `|` belong to the last column, which is free text."""
    lines = (line for line in text.splitlines() if line.strip())
    reader = csv.DictReader(
        lines, fieldnames=columns, restkey="_rest", delimiter="|", quoting=csv.QUOTE_NONE
    )
    for row in reader:
        if row[columns[-1]] is None:
            given = "|".join(value for value in row.values() if value is not None)
            raise SlurmParseError(f"expected {len(columns)} columns: {given!r}")
        if "_rest" in row:
            row[columns[-1]] = "|".join([row[columns[-1]], *row.pop("_rest")])
        yield row


@dataclass(frozen=True)
class JobId:
    """`1234`, `1234_5` (task 5 of array job 1234), `1234_[6-9%1]` (its tasks not started)."""

    job_id: int
    array_task_id: int | None = None
    pending_tasks: str = ""  # "6-9%1": the part between the brackets

    @classmethod
    def parse(cls, text: str) -> "JobId":
        text = text.strip()
        match = re.fullmatch(r"(\d+)(?:_(?:(\d+)|\[([^\]]+)\]))?", text)
        if not match:
            raise SlurmParseError(f"not a Slurm job id: {text!r}")
        job_id, task, pending = match.groups()
        return cls(int(job_id), None if task is None else int(task), pending or "")

    def __str__(self) -> str:
        if self.array_task_id is not None:
            return f"{self.job_id}_{self.array_task_id}"
        if self.pending_tasks:
            return f"{self.job_id}_[{self.pending_tasks}]"
        return str(self.job_id)
