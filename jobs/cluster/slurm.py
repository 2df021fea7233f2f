"""What Slurm 22.05 prints, read into dataclasses: pure functions, no I/O, no Django.

The argv of each command the portal parses lives here too (`squeue_argv`, `sacct_argv`, ...), so
that no caller can ask for other columns than the parser reads. Columns are separated by `|`; the
free-text ones (job name, comment) come last, and a `|` inside the last one stays in it.
Slurm prints times in the local time of the process that asks, without a zone; the commands
here run with TZ=UTC (`IN_UTC`), so the times they print, and the times they read, are UTC.
The tests feed text captured from a real cluster (tests/slurm_output/).
"""

import csv
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from guidance.engine.slurm_time import parse_seconds

# Slurm reads and prints times in the TZ of its caller; a cluster's zone is none of our business.
IN_UTC = ["env", "TZ=UTC"]


class SlurmParseError(ValueError):
    """Slurm printed something these parsers do not understand."""


class SlurmState(StrEnum):
    """A job's state as squeue's %T and sacct's State print it (Slurm 22.05)."""

    BOOT_FAIL = "BOOT_FAIL"
    CANCELLED = "CANCELLED"
    COMPLETED = "COMPLETED"
    COMPLETING = "COMPLETING"
    CONFIGURING = "CONFIGURING"
    DEADLINE = "DEADLINE"
    FAILED = "FAILED"
    NODE_FAIL = "NODE_FAIL"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    PENDING = "PENDING"
    PREEMPTED = "PREEMPTED"
    REQUEUED = "REQUEUED"
    REQUEUE_FED = "REQUEUE_FED"
    REQUEUE_HOLD = "REQUEUE_HOLD"
    RESIZING = "RESIZING"
    RESV_DEL_HOLD = "RESV_DEL_HOLD"
    REVOKED = "REVOKED"
    RUNNING = "RUNNING"
    SIGNALING = "SIGNALING"
    SPECIAL_EXIT = "SPECIAL_EXIT"
    STAGE_OUT = "STAGE_OUT"
    STOPPED = "STOPPED"
    SUSPENDED = "SUSPENDED"
    TIMEOUT = "TIMEOUT"
    # Not printed by Slurm 22.05: a later Slurm's new state word reads as this, not as an error,
    # so that one job stops neither the poll nor the parse of the other jobs. Not final.
    UNKNOWN = "UNKNOWN"

    @classmethod
    def parse(cls, text: str) -> "SlurmState":
        # sacct says who cancelled: "CANCELLED by 1001".
        word = text.strip().split(" ", 1)[0]
        # Anything but a state word (a column out of place) is an error, not a new state.
        if not re.fullmatch(r"[A-Z][A-Z_]*", word):
            raise SlurmParseError(f"not a job state: {text!r}")
        try:
            return cls(word)
        except ValueError:
            return cls.UNKNOWN

    @property
    def is_final(self) -> bool:
        """The job has ended and will not run again unless someone resubmits or requeues it.

        The one place that decides it: the portal's JobState.final() asks here.
        """
        return self in _FINAL


_FINAL = frozenset(
    {
        SlurmState.BOOT_FAIL,
        SlurmState.CANCELLED,
        SlurmState.COMPLETED,
        SlurmState.DEADLINE,
        SlurmState.FAILED,
        SlurmState.NODE_FAIL,
        SlurmState.OUT_OF_MEMORY,
        SlurmState.PREEMPTED,
        SlurmState.REVOKED,
        SlurmState.TIMEOUT,
    }
)


# ---------------------------------------------------------------------------------------------
# Values that several commands print

# Words Slurm prints where a value is absent or not known yet.
_NO_VALUE = frozenset({"", "N/A", "NONE", "None", "(null)", "Unknown", "INVALID", "None assigned"})


def parse_duration(text: str) -> timedelta | None:
    """`1-02:03:04`, `02:03:04`, `03:04`, `00:00.005` -> timedelta.

    None for UNLIMITED, Partition_Limit (the job has no limit of its own), INVALID and N/A:
    callers that need to tell "no limit" from "unknown" look at the text first.
    """
    text = text.strip()
    if text in _NO_VALUE or text in {"UNLIMITED", "Partition_Limit"}:
        return None
    # squeue and sacct always print a clock: a bare number or D-HH is sbatch's input, not theirs.
    if ":" not in text:
        raise SlurmParseError(f"not a Slurm duration: {text!r}")
    try:
        seconds = parse_seconds(text)
    except ValueError as error:
        raise SlurmParseError(str(error)) from None
    if math.isinf(seconds):
        return None
    return timedelta(seconds=seconds)


def duration_hours(text: str) -> float | None:
    duration = parse_duration(text)
    return None if duration is None else duration.total_seconds() / 3600


def parse_time(text: str) -> datetime | None:
    """`2026-11-22T04:00:00` -> naive datetime (UTC under IN_UTC); None for Unknown, N/A."""
    text = text.strip()
    if text in _NO_VALUE:
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
    if text in _NO_VALUE:
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
    if text in _NO_VALUE:
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
    if text in _NO_VALUE:
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
        if text in _NO_VALUE:
            return None
        code, sep, signal = text.partition(":")
        if not (sep and code.isdigit() and signal.isdigit()):
            raise SlurmParseError(f"not an exit code: {text!r}")
        return cls(int(code), int(signal))


def _rows(text: str, columns: tuple[str, ...]) -> Iterator[dict[str, str]]:
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


# ---------------------------------------------------------------------------------------------
# Job ids and sbatch --parsable


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


@dataclass(frozen=True)
class Submitted:
    job_id: int  # for an array, the array's job id: its tasks are `<job_id>_<n>`
    cluster: str = ""  # set when the site runs several clusters (federation, -M)


def parse_sbatch(stdout: str) -> Submitted:
    """`sbatch --parsable` prints `<jobid>` or `<jobid>;<cluster>` on one line."""
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    if not lines:
        raise SlurmParseError("sbatch printed no job id")
    job_id, _, cluster = lines[-1].partition(";")
    if not job_id.isdigit():
        raise SlurmParseError(f"sbatch printed no job id: {stdout!r}")
    return Submitted(int(job_id), cluster)


# ---------------------------------------------------------------------------------------------
# squeue

# Field, squeue format code. Free text last.
_SQUEUE_FIELDS = (
    ("job_id", "%i"),
    ("array_job_id", "%F"),
    ("array_task_id", "%K"),
    ("state", "%T"),
    ("reason", "%r"),
    ("start", "%S"),
    ("time_used", "%M"),
    ("time_limit", "%l"),
    ("nodes", "%N"),
    ("user", "%u"),
    ("name", "%j"),
    ("comment", "%k"),
)
SQUEUE_FORMAT = "|".join(code for _, code in _SQUEUE_FIELDS)


def squeue_argv(user: str) -> list[str]:
    """The user's jobs, one line per array task, finished ones included for MinJobAge seconds;
    --all: also those in partitions the site hides (squeue leaves them out otherwise)."""
    return [
        *IN_UTC,
        "squeue",
        "--noheader",
        "--all",
        "--array",
        "--states=all",
        f"--user={user}",
        f"--format={SQUEUE_FORMAT}",
    ]


@dataclass(frozen=True)
class QueuedJob:
    job_id: JobId
    array_job_id: int  # the job's own id when it is not an array task
    array_task_id: int | None
    state: SlurmState
    state_text: str  # as printed: the word itself where `state` is UNKNOWN
    reason: str  # why it waits or ended: Resources, JobHeldUser, TimeLimit, ...; "" for none
    start: datetime | None  # expected start while pending, if the scheduler knows
    time_used: timedelta | None
    time_limit: timedelta | None  # None: UNLIMITED
    nodes: list[str]
    user: str
    name: str
    comment: str

    @property
    def slurm_id(self) -> str:
        return str(self.job_id)


def parse_squeue(text: str) -> list[QueuedJob]:
    jobs = []
    for row in _rows(text, tuple(name for name, _ in _SQUEUE_FIELDS)):
        task = row["array_task_id"].strip()
        jobs.append(
            QueuedJob(
                job_id=JobId.parse(row["job_id"]),
                array_job_id=int(row["array_job_id"]),
                array_task_id=int(task) if task.isdigit() else None,
                state=SlurmState.parse(row["state"]),
                state_text=row["state"].strip(),
                reason=_no_value_as_empty(row["reason"]).strip(),
                start=parse_time(row["start"]),
                time_used=parse_duration(row["time_used"]),
                time_limit=parse_duration(row["time_limit"]),
                nodes=expand_hostlist(row["nodes"]),
                user=row["user"].strip(),
                name=row["name"],
                comment=_no_value_as_empty(row["comment"]),
            )
        )
    return jobs


def _no_value_as_empty(text: str) -> str:
    return "" if text.strip() in _NO_VALUE else text


# ---------------------------------------------------------------------------------------------
# sacct

# Comment is free text: last.
SACCT_FIELDS = (
    "JobID",
    "JobIDRaw",
    "State",
    "ExitCode",
    "Elapsed",
    "Start",
    "End",
    "NodeList",
    "AllocTRES",
    "Reason",
    "TotalCPU",
    "MaxRSS",
    "ReqMem",
    "Timelimit",
    "Partition",  # blank on step lines
    "Comment",
)


def sacct_argv(user: str, since: datetime, jobs: Iterable[int | str] = ()) -> list[str]:
    """The user's jobs that were eligible, ran or ended since `since` (naive UTC).

    Steps are listed too (no --allocations): only they carry MaxRSS, and only without
    --allocations does the job's line sum its steps' TotalCPU. parse_sacct folds them in.
    A job that never became eligible (held, or waiting on a dependency, then cancelled) is
    outside any time window: name it in `jobs` to see it.
    """
    argv = [
        *IN_UTC,
        "sacct",
        "--parsable2",
        "--noheader",
        f"--user={user}",
        f"--starttime={since:%Y-%m-%dT%H:%M:%S}",
        "--endtime=now",
        f"--format={','.join(SACCT_FIELDS)}",
    ]
    if jobs:
        argv.append(f"--jobs={','.join(str(job) for job in jobs)}")
    return argv


@dataclass(frozen=True)
class AccountedJob:
    job_id: JobId
    job_id_raw: int  # an array task's own id
    state: SlurmState
    state_text: str  # as printed: "CANCELLED by 1001"; the word itself where `state` is UNKNOWN
    cancelled_by: int | None  # the uid in "CANCELLED by 1001"
    exit_code: ExitCode | None
    elapsed: timedelta | None
    start: datetime | None
    end: datetime | None
    nodes: list[str]
    tres: dict[str, str]  # what the allocation got: cpu, mem, node, gres/gpu, gres/gpu:a100, ...
    reason: str
    total_cpu: timedelta | None  # user + system time of all its steps
    max_rss_mb: float | None  # the largest of its steps' peaks; None before a step reports one
    requested_memory_mb: float | None
    time_limit: timedelta | None  # None: UNLIMITED or Partition_Limit
    partition: str
    comment: str

    @property
    def slurm_id(self) -> str:
        return str(self.job_id)

    @property
    def gpus(self) -> int:
        return int(self.tres.get("gres/gpu", 0))

    @property
    def cpus(self) -> int | None:
        return int(self.tres["cpu"]) if "cpu" in self.tres else None

    @property
    def gpu_type(self) -> str:
        """`a100` from `gres/gpu:a100=1`; several types joined by commas; "" when untyped."""
        return ",".join(sorted(key[9:] for key in self.tres if key.startswith("gres/gpu:")))


def parse_sacct(text: str) -> list[AccountedJob]:
    """One AccountedJob per job or array task, in sacct's order; step lines only add MaxRSS."""
    jobs: dict[str, AccountedJob] = {}
    step_rss: dict[str, float] = {}
    for row in _rows(text, SACCT_FIELDS):
        job_id, dot, _step = row["JobID"].strip().partition(".")
        if dot:
            rss = parse_memory_mb(row["MaxRSS"])
            if rss is not None:
                step_rss[job_id] = max(rss, step_rss.get(job_id, 0.0))
            continue
        state_text = row["State"].strip()
        by = re.fullmatch(r"CANCELLED by (\d+)", state_text)
        jobs[job_id] = AccountedJob(
            job_id=JobId.parse(job_id),
            job_id_raw=int(row["JobIDRaw"]),
            state=SlurmState.parse(state_text),
            state_text=state_text,
            cancelled_by=int(by[1]) if by else None,
            exit_code=ExitCode.parse(row["ExitCode"]),
            elapsed=parse_duration(row["Elapsed"]),
            start=parse_time(row["Start"]),
            end=parse_time(row["End"]),
            nodes=expand_hostlist(row["NodeList"]),
            tres=parse_tres(row["AllocTRES"]),
            reason=_no_value_as_empty(row["Reason"]).strip(),
            total_cpu=parse_duration(row["TotalCPU"]),
            max_rss_mb=parse_memory_mb(row["MaxRSS"]),
            requested_memory_mb=parse_memory_mb(row["ReqMem"]),
            time_limit=parse_duration(row["Timelimit"]),
            partition=_no_value_as_empty(row["Partition"]).strip(),
            comment=_no_value_as_empty(row["Comment"]),
        )
    return [
        replace(job, max_rss_mb=step_rss[key]) if key in step_rss else job
        for key, job in jobs.items()
    ]


# ---------------------------------------------------------------------------------------------
# Partitions and nodes, for importing a cluster's partitions and GPU types

PARTITIONS_ARGV = ["scontrol", "--oneliner", "show", "partition"]
SINFO_NODES_FORMAT = "%N|%P|%c|%m|%G"
NODES_ARGV = ["sinfo", "--Node", "--noheader", f"--format={SINFO_NODES_FORMAT}"]


@dataclass(frozen=True)
class PartitionFacts:
    name: str
    nodes: list[str]
    max_hours: float | None  # None: UNLIMITED
    default_hours: float | None  # None: the partition sets none (jobs get MaxTime)
    state: str  # UP, DOWN, DRAIN, INACTIVE
    is_default: bool
    total_cpus: int | None
    total_nodes: int | None
    tres: dict[str, str]  # cpu, mem, node, billing, gres/gpu: the partition's whole capacity
    fields: dict[str, str]  # everything scontrol printed, for what is not read above


def parse_partitions(text: str) -> list[PartitionFacts]:
    """`scontrol show partition -o`: one line per partition of `Key=Value` words."""
    partitions = []
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = dict(_key_values(line))
        if "PartitionName" not in fields:
            raise SlurmParseError(f"not a partition line: {line!r}")
        partitions.append(
            PartitionFacts(
                name=fields["PartitionName"],
                nodes=expand_hostlist(fields.get("Nodes", "")),
                max_hours=duration_hours(fields.get("MaxTime", "UNLIMITED")),
                default_hours=duration_hours(fields.get("DefaultTime", "NONE")),
                state=fields.get("State", ""),
                is_default=fields.get("Default") == "YES",
                total_cpus=_int_or_none(fields.get("TotalCPUs", "")),
                total_nodes=_int_or_none(fields.get("TotalNodes", "")),
                tres=parse_tres(fields.get("TRES", "")),
                fields=fields,
            )
        )
    return partitions


def _key_values(line: str) -> Iterator[tuple[str, str]]:
    for word in line.split():
        key, sep, value = word.partition("=")
        if not sep:
            raise SlurmParseError(f"not a Key=Value word: {word!r} in {line!r}")
        yield key, value


def _int_or_none(text: str) -> int | None:
    return int(text) if text.isdigit() else None


@dataclass(frozen=True)
class NodeFacts:
    name: str
    partitions: tuple[str, ...]
    cpus: int
    memory_mb: int
    gres: tuple[Gres, ...]

    @property
    def gpus(self) -> tuple[Gres, ...]:
        return tuple(gres for gres in self.gres if gres.name == "gpu")


def parse_nodes(text: str) -> list[NodeFacts]:
    """`sinfo -N -h -o "%N|%P|%c|%m|%G"`: a line per node and partition, merged per node.

    The default partition carries a `*` (`gpu-a100*`); it is dropped here.
    """
    nodes: dict[str, NodeFacts] = {}
    for row in _rows(text, ("name", "partition", "cpus", "memory", "gres")):
        name, partition = row["name"].strip(), row["partition"].strip().rstrip("*")
        known = nodes.get(name)
        if known:
            nodes[name] = NodeFacts(
                name, (*known.partitions, partition), known.cpus, known.memory_mb, known.gres
            )
            continue
        nodes[name] = NodeFacts(
            name=name,
            partitions=(partition,),
            cpus=int(row["cpus"]),
            memory_mb=int(row["memory"]),
            gres=parse_gres(row["gres"]),
        )
    return list(nodes.values())


@dataclass(frozen=True)
class GpuPartition:
    """What the portal's Partition model needs, from the partition and its nodes."""

    name: str
    gpu_type: str
    gpus_per_node: int
    cpus_per_node: int
    memory_per_node_mb: int
    node_count: int
    max_hours: float | None
    default_hours: float | None


def gpu_partitions(
    partitions: Iterable[PartitionFacts], nodes: Iterable[NodeFacts]
) -> list[GpuPartition]:
    """One entry per partition and GPU type; a node's smallest size stands for the partition.

    Partitions without GPUs are left out; one with two GPU types gives two entries.
    """
    nodes_by_name = {node.name: node for node in nodes}
    result = []
    for partition in partitions:
        members = [nodes_by_name[name] for name in partition.nodes if name in nodes_by_name]
        by_type: dict[str, list[tuple[NodeFacts, int]]] = {}
        for node in members:
            for gres in node.gpus:
                by_type.setdefault(gres.type, []).append((node, gres.count))
        for gpu_type, typed in sorted(by_type.items()):
            result.append(
                GpuPartition(
                    name=partition.name,
                    gpu_type=gpu_type,
                    gpus_per_node=min(count for _, count in typed),
                    cpus_per_node=min(node.cpus for node, _ in typed),
                    memory_per_node_mb=min(node.memory_mb for node, _ in typed),
                    node_count=len(typed),
                    max_hours=partition.max_hours,
                    default_hours=partition.default_hours,
                )
            )
    return result


# ---------------------------------------------------------------------------------------------
# sbatch --test-only: when and where a script would start, without submitting it

_WOULD_START = re.compile(
    r"Job \d+ to start at (?P<start>\S+) using (?P<cpus>\d+) processors on nodes "
    r"(?P<nodes>\S+) in partition (?P<partition>\S+)"
)


TEST_ONLY_ARGV = [*IN_UTC, "sbatch", "--test-only"]


@dataclass(frozen=True)
class WouldStart:
    start: datetime | None  # the scheduler's estimate, naive UTC
    cpus: int
    nodes: list[str]
    partition: str


def parse_test_only(stderr: str) -> WouldStart:
    """`sbatch --test-only` answers on stderr, e.g. "sbatch: Job 477 to start at
    2026-11-22T05:43:06 using 1 processors on nodes a100-1 in partition gpu-a100"; the job id
    is made up (no job exists)."""
    match = _WOULD_START.search(stderr)
    if match is None:
        raise SlurmParseError(f"sbatch --test-only said no start time: {stderr.strip()!r}")
    return WouldStart(
        start=parse_time(match["start"]),
        cpus=int(match["cpus"]),
        nodes=expand_hostlist(match["nodes"]),
        partition=match["partition"],
    )
