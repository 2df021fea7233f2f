"""squeue: what is queued or running, and why it waits."""

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from jobs.slurm.states import SlurmState
from jobs.slurm.values import (
    IN_UTC,
    JobId,
    expand_hostlist,
    no_value_as_empty,
    parse_duration,
    parse_timestamp,
    read_rows,
)

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


def squeue_argv(user: str | Sequence[str]) -> list[str]:
    """The user's jobs (or the jobs of several users, for a cluster-wide reader), one line per
    array task, finished ones included for MinJobAge seconds; --all: also those in partitions
    the site hides (squeue leaves them out otherwise). A name that is no user on the cluster is
    left out with a word on stderr (unknown_users), the others' jobs still listed (22.05)."""
    if not isinstance(user, str):
        if not user:
            raise ValueError("squeue_argv needs at least one user")
        user = ",".join(user)
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


# squeue 22.05 on a name in --user that is no user on the cluster; it exits 0 all the same.
_UNKNOWN_USER = re.compile(r"^squeue: error: Invalid user: (\S+)\s*$", re.MULTILINE)


def unknown_users(stderr: str) -> set[str]:
    """The names in squeue's --user that are no users on the cluster, from what it said."""
    return set(_UNKNOWN_USER.findall(stderr))


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


def parse_squeue(text: str, of_jobs: Collection[str] | None = None) -> list[QueuedJob]:
    """The rows squeue printed; with `of_jobs` (Slurm ids, an array's own), only their rows. A
    login's queue lists every job of its Unix user, the portal's or not, and a poll wants its
    few: the others are not parsed (a user with hundreds of tasks queued, or many portal users
    sharing one Unix user, would cost every poll that much parsing)."""
    if of_jobs is not None:
        wanted = {*of_jobs, None}
        text = "\n".join(line for line in text.splitlines() if _array_job_id(line) in wanted)
    jobs = []
    for row in read_rows(text, tuple(name for name, _ in _SQUEUE_FIELDS)):
        task = row["array_task_id"].strip()
        jobs.append(
            QueuedJob(
                job_id=JobId.parse(row["job_id"]),
                array_job_id=int(row["array_job_id"]),
                array_task_id=int(task) if task.isdigit() else None,
                state=SlurmState.parse(row["state"]),
                state_text=row["state"].strip(),
                reason=no_value_as_empty(row["reason"]).strip(),
                start=parse_timestamp(row["start"]),
                time_used=parse_duration(row["time_used"]),
                time_limit=parse_duration(row["time_limit"]),
                nodes=expand_hostlist(row["nodes"]),
                user=row["user"].strip(),
                name=row["name"],
                comment=no_value_as_empty(row["comment"]),
            )
        )
    return jobs


def _array_job_id(line: str) -> str | None:
    """A row's array job id (its second column, "%F"), read without parsing the row; None keeps
    a row too short to have one, so that parsing it says what is wrong."""
    columns = line.split("|", 2)
    return columns[1].strip() if len(columns) == 3 else None
