"""What sbatch prints: the job id (`--parsable`), or when a job would start (`--test-only`)."""

import re
from dataclasses import dataclass
from datetime import datetime

from jobs.slurm.values import IN_UTC, SlurmParseError, expand_hostlist, parse_timestamp


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


# When and where a script would start, without submitting it.
TEST_ONLY_ARGV = [*IN_UTC, "sbatch", "--test-only"]

_WOULD_START = re.compile(
    r"Job \d+ to start at (?P<start>\S+) using (?P<cpus>\d+) processors on nodes "
    r"(?P<nodes>\S+) in partition (?P<partition>\S+)"
)


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
        start=parse_timestamp(match["start"]),
        cpus=int(match["cpus"]),
        nodes=expand_hostlist(match["nodes"]),
        partition=match["partition"],
    )
