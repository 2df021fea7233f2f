"""GPU sample files: which ones a poll reads, and reading them while their jobs run.

The sampler (jobs/gpu/sampler/portal_gpu_sampler.py) appends JSON lines to one file per node,
`<job dir>/gpu-<label>.<node>.jsonl` in the login's home, where the label is the Slurm id, or
`<array id>_<task>` for a part of an array. Each poll reads what each file gained since the last
one, from the offset its SampleFile row keeps, over the login's one SFTP session: no command
runs, however many jobs there are. A partial last line stays for the next poll.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.utils import timezone

from jobs.cluster import remote
from jobs.gpu import efficiency
from jobs.gpu.sample_lines import parse
from jobs.gpu.sample_store import Read, Stored, store
from jobs.models import ClusterAccount, Job, JobState, JobTask, SampleFile

# Bytes per file per poll: a backlog (a portal that was down) drains over polls.
READ_CAP = 256 * 1024
# A job's last lines (the summary) may reach the login node after Slurm says the job ended (file
# systems cache): its files are read until each has its summary, for at most this long.
FINAL_READ_SECONDS = 300


@dataclass(frozen=True)
class Part:
    """A job, or one task of an array, whose sample files are to be read."""

    job: Job
    task_id: str
    nodes: tuple[str, ...] | None  # None: not known (array tasks), found by listing the job dir

    @property
    def label(self) -> str:
        return f"{self.job.slurm_id}_{self.task_id}" if self.task_id else self.job.slurm_id


@dataclass
class Collected:
    files: int = 0  # files asked for (a stat each)
    bytes: int = 0
    stored: Stored = field(default_factory=Stored)


STILL_SAMPLED = {JobState.RUNNING, JobState.COMPLETING}


def _just_ended(part: Job | JobTask, now: datetime) -> bool:
    """Ended after it started, not long ago (or sacct has no end time for it yet)."""
    if part.state not in JobState.final() or part.started is None:
        return False
    return part.ended is None or part.ended >= now - timedelta(seconds=FINAL_READ_SECONDS)


def parts_to_read(
    account: ClusterAccount, jobs: Iterable[Job], now: datetime, *, any_ended: bool = True
) -> list[Part]:
    """The jobs and tasks whose files may have new lines: running ones, ones that ended since
    the last poll, and ones that ended lately with a file that has not given its summary yet
    (looked for only when `any_ended`: the caller may know that none of the login's jobs ended
    within FINAL_READ_SECONDS)."""
    cutoff = now - timedelta(seconds=FINAL_READ_SECONDS)
    chosen = {
        job.pk: job
        for job in jobs
        if job.slurm_id and (job.state in STILL_SAMPLED or _just_ended(job, now))
    }
    if any_ended:
        unfinished = (
            account.jobs.filter(state__in=JobState.final(), ended__gte=cutoff)
            .filter(sample_files__finished=False)
            .exclude(pk__in=list(chosen))
            .exclude(slurm_id="")
            .distinct()
        )
        chosen.update((job.pk, job) for job in unfinished)
    tasks: dict[int, list[JobTask]] = {}
    for task in JobTask.objects.filter(job_id__in=list(chosen)):
        tasks.setdefault(task.job_id, []).append(task)
    parts = []
    for job in chosen.values():
        if job.pk not in tasks:
            nodes = tuple(node for node in job.nodes.split(",") if node)
            parts.append(Part(job, "", nodes))
            continue
        for task in tasks[job.pk]:
            if task.state in STILL_SAMPLED or _just_ended(task, now):
                parts.append(Part(job, task.task_id, None))
    return parts


def file_name(label: str, node: str) -> str:
    return f"gpu-{label}.{node}.jsonl"


def collect(
    account: ClusterAccount,
    jobs: Iterable[Job],
    now: datetime | None = None,
    *,
    any_ended: bool = True,
) -> Collected:
    """Reads and stores the new lines of the sample files of `account`'s jobs (see
    parts_to_read()), at most READ_CAP bytes a file. A file not there (yet) is skipped quietly.
    Cluster errors (ClusterError) propagate: nothing is stored then, and the next poll retries."""
    now = now or timezone.now()
    parts = parts_to_read(account, jobs, now, any_ended=any_ended)
    if not parts:
        return Collected()
    login = remote.login_for(account)
    rows = {
        (row.job_id, row.path): row
        for row in SampleFile.objects.filter(job_id__in={part.job.pk for part in parts})
    }
    wanted: list[SampleFile] = []
    listed: dict[int, dict[str, int]] = {}
    for part in parts:
        nodes = part.nodes
        if nodes is None:
            # An array task's nodes are not kept: its files' names tell them.
            if part.job.pk not in listed:
                listed[part.job.pk] = remote.list_folder(login, part.job.job_dir)
            pattern = re.compile(re.escape(f"gpu-{part.label}.") + r"(.+)\.jsonl")
            nodes = tuple(
                match[1] for name in listed[part.job.pk] if (match := pattern.fullmatch(name))
            )
        for node in nodes:
            path = f"{part.job.job_dir}/{file_name(part.label, node)}"
            row = rows.get((part.job.pk, path)) or SampleFile(
                job=part.job, task_id=part.task_id, node=node[:64], path=path
            )
            if not row.finished:
                wanted.append(row)
    collected = Collected(files=len(wanted))
    if not wanted:
        return collected
    answers = remote.read_from_offsets(login, [(row.path, row.offset) for row in wanted], READ_CAP)
    reads = []
    for row, (data, next_offset) in zip(wanted, answers, strict=True):
        if not data:
            continue
        collected.bytes += len(data)
        start = next_offset - len(data)  # 0 when the file was replaced (a requeued job)
        reads.append(Read(row, start, parse(data, READ_CAP), read_at=row.offset))
    collected.stored = store(reads)
    # Warnings follow the samples: only jobs with new ones can have changed.
    for job in {read.file.job_id: read.file.job for read in reads}.values():
        efficiency.refresh_warning(job)
    return collected
