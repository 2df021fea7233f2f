"""The cluster's whole pending queue, every user's, without their names: what it takes to say
how many jobs come before one of ours and how many GPUs are asked for. One squeue per cluster
per cycle, whatever the number of jobs or users."""

from collections.abc import Iterable
from dataclasses import dataclass

from jobs.slurm.values import parse_tres, read_rows

_FIELDS = ("job_id", "partitions", "priority", "tres")
# An array's tasks that have not started are one line, under the array's id: the id the portal
# keeps. tres-alloc is what a pending job asks for (it becomes the allocation once it runs).
PENDING_ARGV = [
    "squeue",
    "--noheader",
    "--all",
    "--states=PENDING",
    "--Format=JobID:|,Partition:|,PriorityLong:|,tres-alloc:|",
]


@dataclass(frozen=True)
class PendingJob:
    job_id: str
    partitions: tuple[str, ...]  # a job may wait for the first of several
    priority: int  # 0: held, it starts only once released
    gpus: int
    gpu_type: str  # "" for any type

    def comes_before(self, other: "PendingJob") -> bool:
        """Slurm starts the higher priority first, the older job on a tie."""
        if self.priority != other.priority:
            return self.priority > other.priority
        return _id_order(self.job_id) < _id_order(other.job_id)


def _id_order(job_id: str) -> tuple[int, str]:
    number = job_id.partition("_")[0]
    return (int(number), job_id) if number.isdigit() else (0, job_id)


def parse_pending(text: str) -> list[PendingJob]:
    lines = (line.removesuffix("|") for line in text.splitlines())
    jobs = []
    for row in read_rows("\n".join(lines), _FIELDS):
        tres = parse_tres(row["tres"])
        typed = sorted(key.removeprefix("gres/gpu:") for key in tres if key.startswith("gres/gpu:"))
        priority = row["priority"].strip()
        jobs.append(
            PendingJob(
                job_id=row["job_id"].strip(),
                partitions=tuple(p for p in row["partitions"].strip().split(",") if p),
                priority=int(priority) if priority.isdigit() else 0,
                gpus=int(tres.get("gres/gpu", "0") or 0),
                gpu_type=",".join(typed),
            )
        )
    return jobs


def ahead_of(queue: Iterable[PendingJob]) -> dict[str, int | None]:
    """For each pending job, how many pending jobs of its partitions Slurm would start before
    it; None for a held job (priority 0), which has no place until it is released."""
    queue = list(queue)
    by_partition: dict[str, list[PendingJob]] = {}
    for job in queue:
        for partition in job.partitions:
            by_partition.setdefault(partition, []).append(job)
    ahead: dict[str, int | None] = {}
    for job in queue:
        if job.priority == 0:
            ahead[job.job_id] = None
            continue
        rivals = {
            other.job_id
            for partition in job.partitions
            for other in by_partition[partition]
            if other.priority > 0 and other.comes_before(job)
        }
        ahead[job.job_id] = len(rivals)
    return ahead


def gpu_demand(queue: Iterable[PendingJob]) -> dict[tuple[str, str], int]:
    """GPUs asked for by pending jobs, per (partition, GPU type); a job that may run in several
    partitions counts in each."""
    demand: dict[tuple[str, str], int] = {}
    for job in queue:
        if job.gpus:
            for partition in job.partitions:
                key = (partition, job.gpu_type)
                demand[key] = demand.get(key, 0) + job.gpus
    return demand
