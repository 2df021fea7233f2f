"""sacct: how a job ended, and what it was given and used."""

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from jobs.slurm.states import SlurmState
from jobs.slurm.values import (
    IN_UTC,
    ExitCode,
    JobId,
    expand_hostlist,
    no_value_as_empty,
    parse_duration,
    parse_memory_mb,
    parse_timestamp,
    parse_tres,
    read_rows,
)

# Comment is free text: last. JobName and WorkDir come just before it: a `|` in either shifts
# only the free-text columns (read_rows gives the extras to Comment), never the figures.
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
    "JobName",  # "batch", "extern" on step lines
    "WorkDir",  # blank on step lines
    "Comment",
)

# A read of several users' jobs at once (a cluster-wide reader) says whose each row is: User, a
# Unix name with no `|`, before the free-text columns.
SACCT_FIELDS_WITH_USER = (*SACCT_FIELDS[:-3], "User", *SACCT_FIELDS[-3:])


def sacct_argv(user: str, since: datetime, jobs: Iterable[int | str] = ()) -> list[str]:
    """The user's jobs that were eligible, ran or ended since `since` (naive UTC).

    Steps are listed too (no --allocations): only they carry MaxRSS, and only without
    --allocations does the job's line sum its steps' TotalCPU. parse_sacct folds them in.
    A job that never became eligible (held, or waiting on a dependency, then cancelled) is
    outside any time window: name it in `jobs` to see it.
    """
    return _argv(f"--user={user}", since, jobs, SACCT_FIELDS)


def sacct_users_argv(
    users: Sequence[str], since: datetime, jobs: Iterable[int | str] = ()
) -> list[str]:
    """Like sacct_argv, for the jobs of several users, each row with its User (parse it with
    SACCT_FIELDS_WITH_USER). No `users`: every user's jobs, for `jobs` named by id (sacct 22.05
    lists any user's job it is asked for by id, to anyone, where PrivateData does not hide jobs;
    without ids it lists only the caller's). A name that is no user on the cluster makes sacct
    fail (exit 1, "Invalid user id"): leave out those squeue named (squeue.unknown_users)."""
    if not users and not jobs:
        raise ValueError("sacct_users_argv needs users or job ids")
    who = f"--user={','.join(users)}" if users else "--allusers"
    return _argv(who, since, jobs, SACCT_FIELDS_WITH_USER)


def _argv(
    who: str, since: datetime, jobs: Iterable[int | str], fields: tuple[str, ...]
) -> list[str]:
    argv = [
        *IN_UTC,
        "sacct",
        "--parsable2",
        "--noheader",
        who,
        f"--starttime={since:%Y-%m-%dT%H:%M:%S}",
        "--endtime=now",
        f"--format={','.join(fields)}",
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
    name: str
    work_dir: str  # where sbatch ran, and by default where slurm-<id>.out is
    comment: str
    user: str = ""  # whose job: read only with SACCT_FIELDS_WITH_USER

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


def parse_sacct(text: str, fields: tuple[str, ...] = SACCT_FIELDS) -> list[AccountedJob]:
    """One AccountedJob per job or array task, in sacct's order; step lines only add MaxRSS.
    `fields`: the columns asked for (SACCT_FIELDS, or SACCT_FIELDS_WITH_USER)."""
    jobs: dict[str, AccountedJob] = {}
    step_rss: dict[str, float] = {}
    for row in read_rows(text, fields):
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
            start=parse_timestamp(row["Start"]),
            end=parse_timestamp(row["End"]),
            nodes=expand_hostlist(row["NodeList"]),
            tres=parse_tres(row["AllocTRES"]),
            reason=no_value_as_empty(row["Reason"]).strip(),
            total_cpu=parse_duration(row["TotalCPU"]),
            max_rss_mb=parse_memory_mb(row["MaxRSS"]),
            requested_memory_mb=parse_memory_mb(row["ReqMem"]),
            time_limit=parse_duration(row["Timelimit"]),
            partition=no_value_as_empty(row["Partition"]).strip(),
            name=row["JobName"],
            work_dir=no_value_as_empty(row["WorkDir"]).strip(),
            comment=no_value_as_empty(row["Comment"]),
            user=row.get("User", "").strip(),
        )
    return [
        replace(job, max_rss_mb=step_rss[key]) if key in step_rss else job
        for key, job in jobs.items()
    ]
