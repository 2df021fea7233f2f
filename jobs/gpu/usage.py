"""How well the users' jobs used their GPUs over a period, for the admins' usage page: the
portal's own and those found in Slurm's accounting (submitted outside the portal).

`load` reads what it needs in three queries whatever the number of jobs (the jobs that overlap
the period, their array tasks, their idle GPUs); `summarize` is plain arithmetic on the result.
A job's GPU-hours are its GPUs times the part of its run inside the period; a chain's or an
array's run is its tasks' runs, not the span from the first start to the last end, which would
count the waits between parts. Jobs without utilization samples are "unknown": they count as
allocated, never as idle nor as busy.

Beside what they held, what they asked for and used up: a run's GPU-hours requested (its GPUs
times its time limit) and its GPUs' energy (NVML's counter, for the whole run) count for the
share of the run that falls inside the period, as its GPU-hours do. A job whose GPUs did not
report their energy is "unknown" too, never 0 kWh.
"""

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, Q

from guidance.engine.gpu_use import JOULES_PER_KWH
from jobs.models import GpuDevice, Job, JobOrigin, JobTask

DEFAULT_TARGET_PERCENT = 90  # Policy's default, for a cluster that has no policy
IDLE_PERCENT = 1.0  # a GPU whose mean utilization is below this did no work
TOP_WASTE = 10


@dataclass(frozen=True)
class Period:
    start: datetime
    end: datetime  # exclusive; never later than now, so that averages are not diluted

    @property
    def hours(self) -> float:
        return (self.end - self.start).total_seconds() / 3600

    def hours_of(self, start: datetime, end: datetime) -> float:
        """The hours of [start, end) that fall inside the period."""
        overlap = min(end, self.end) - max(start, self.start)
        return max(overlap.total_seconds(), 0) / 3600


@dataclass(frozen=True)
class JobUse:
    pk: int
    name: str
    slurm_id: str
    owner: str
    cluster: str
    partition: str
    gpu_type: str
    gpus: int
    utilization: float | None  # mean %, None without samples
    target_percent: int
    runs: dict[str, tuple[datetime, datetime]]  # task id ("" for a plain job) -> start, end
    idle_gpus: dict[str, int] = field(default_factory=dict)  # task id -> GPUs under 1%
    outside: bool = False  # submitted outside the portal: never sampled, so "unknown"
    time_limit_seconds: int | None = None  # each run's (a chain's part, an array's task)
    energy_j: float | None = None  # its GPUs' over its whole run so far; None: unknown

    @property
    def idle_gpu_count(self) -> int:
        return sum(self.idle_gpus.values())


@dataclass
class Figures:
    """GPU-hours of some jobs over the period, and what they make on average."""

    jobs: int = 0
    outside_jobs: int = 0  # of `jobs`, those submitted outside the portal
    allocated: float = 0.0
    known: float = 0.0  # allocated to jobs whose utilization is known
    busy: float = 0.0  # known x utilization
    idle: float = 0.0  # on GPUs that stayed under IDLE_PERCENT
    at_target: float = 0.0  # the GPU-hours `busy` would take at the cluster's target
    requested: float = 0.0  # GPUs x time limit, of jobs whose limit is known
    energy_j: float = 0.0  # of the jobs whose GPUs reported their energy
    energy_known: float = 0.0  # the GPU-hours allocated to those jobs

    def add(self, other: "Figures") -> None:
        self.jobs += other.jobs
        self.outside_jobs += other.outside_jobs
        self.allocated += other.allocated
        self.known += other.known
        self.busy += other.busy
        self.idle += other.idle
        self.at_target += other.at_target
        self.requested += other.requested
        self.energy_j += other.energy_j
        self.energy_known += other.energy_known

    @property
    def unknown(self) -> float:
        return self.allocated - self.known

    @property
    def unused(self) -> float:
        return self.known - self.busy

    @property
    def utilization(self) -> float | None:
        return 100 * self.busy / self.known if self.known else None

    @property
    def used_of_requested(self) -> float | None:
        """% of the GPU-hours requested that the jobs held."""
        return 100 * self.allocated / self.requested if self.requested else None

    @property
    def energy_kwh(self) -> float | None:
        return self.energy_j / JOULES_PER_KWH if self.energy_known else None

    @property
    def energy_unknown(self) -> float:
        """GPU-hours of jobs whose GPUs did not report their energy."""
        return self.allocated - self.energy_known


@dataclass(frozen=True)
class Group:
    name: str
    figures: Figures
    hours: float  # the period's

    @property
    def gpus_in_use(self) -> float:
        return self.figures.allocated / self.hours

    @property
    def gpus_needed(self) -> float:
        return self.figures.at_target / self.hours


@dataclass(frozen=True)
class Waste:
    job: JobUse
    figures: Figures


@dataclass(frozen=True)
class UsageReport:
    period: Period
    total: Figures
    by_user: list[Group]
    by_partition: list[Group]
    by_gpu_type: list[Group]
    by_cluster: list[Group]
    top_waste: list[Waste]
    targets: list[int]  # the clusters' utilization targets, for the wording

    @property
    def gpus_in_use(self) -> float:
        return self.total.allocated / self.period.hours

    @property
    def known_gpus_in_use(self) -> float:
        return self.total.known / self.period.hours

    @property
    def unknown_gpus_in_use(self) -> float:
        return self.total.unknown / self.period.hours

    @property
    def gpus_needed(self) -> int:
        # Whole GPUs; the epsilon keeps 28.0000001 from becoming 29.
        return math.ceil(self.total.at_target / self.period.hours - 1e-9)


def figures_of(job: JobUse, period: Period) -> Figures:
    hours = {task: period.hours_of(*run) for task, run in job.runs.items()}
    allocated = job.gpus * sum(hours.values())
    figures = Figures(jobs=1, outside_jobs=int(job.outside), allocated=allocated)
    # The share of each run inside the period (all of a run too short to measure).
    shares = {
        task: hours[task] / length if (length := _hours(*run)) > 0 else 1.0
        for task, run in job.runs.items()
    }
    if job.time_limit_seconds:
        figures.requested = job.gpus * job.time_limit_seconds / 3600 * sum(shares.values())
    if job.energy_j is not None and allocated:
        whole = sum(_hours(*run) for run in job.runs.values())
        figures.energy_j = job.energy_j * (sum(hours.values()) / whole if whole else 1.0)
        figures.energy_known = allocated
    if job.utilization is None or allocated == 0:
        return figures
    figures.known = allocated
    figures.busy = allocated * min(job.utilization, 100) / 100
    figures.at_target = figures.busy * 100 / job.target_percent
    whole_run = sum(hours.values()) / len(hours)
    idle = sum(count * hours.get(task, whole_run) for task, count in job.idle_gpus.items())
    # The job's mean and its GPUs' means come from the same samples but are saved at
    # different moments: never let the idle hours exceed the unused ones.
    figures.idle = min(idle, figures.unused)
    return figures


def _hours(start: datetime, end: datetime) -> float:
    return max((end - start).total_seconds(), 0) / 3600


def summarize(jobs: Iterable[JobUse], period: Period, multi_cluster: bool = False) -> UsageReport:
    total = Figures()
    groups: dict[str, dict[str, Figures]] = {
        "user": defaultdict(Figures),
        "partition": defaultdict(Figures),
        "gpu_type": defaultdict(Figures),
        "cluster": defaultdict(Figures),
    }
    wastes, targets = [], set()
    for job in jobs:
        figures = figures_of(job, period)
        if not figures.allocated:
            continue
        targets.add(job.target_percent)
        total.add(figures)
        partition = job.partition or "unknown"
        groups["user"][job.owner].add(figures)
        groups["partition"][f"{job.cluster} / {partition}" if multi_cluster else partition].add(
            figures
        )
        groups["gpu_type"][job.gpu_type or "unknown"].add(figures)
        groups["cluster"][job.cluster].add(figures)
        if figures.unused > 0:
            wastes.append(Waste(job, figures))
    wastes.sort(key=lambda waste: (-waste.figures.unused, waste.job.pk))

    def table(kind: str) -> list[Group]:
        rows = [Group(name, figures, period.hours) for name, figures in groups[kind].items()]
        return sorted(rows, key=lambda group: (-group.figures.allocated, group.name))

    return UsageReport(
        period=period,
        total=total,
        by_user=table("user"),
        by_partition=table("partition"),
        by_gpu_type=table("gpu_type"),
        by_cluster=table("cluster"),
        top_waste=wastes[:TOP_WASTE],
        targets=sorted(targets),
    )


def load(period: Period, cluster_id: int | None, now: datetime) -> list[JobUse]:
    """The GPU jobs whose run overlaps the period, with their tasks' runs and idle GPUs."""
    jobs = Job.objects.filter(started__lt=period.end, gpus__gt=0).filter(
        Q(ended__isnull=True) | Q(ended__gt=period.start)
    )
    if cluster_id is not None:
        jobs = jobs.filter(account__cluster_id=cluster_id)
    runs: dict[int, dict[str, tuple[datetime, datetime]]] = defaultdict(dict)
    tasks = JobTask.objects.filter(job__in=jobs, started__isnull=False)
    for job_id, task_id, started, ended in tasks.values_list(
        "job_id", "task_id", "started", "ended"
    ):
        runs[job_id][task_id] = (started, ended or now)
    idle: dict[int, dict[str, int]] = defaultdict(dict)
    devices = (
        GpuDevice.objects.filter(job__in=jobs, mig=False, mean_utilization__lt=IDLE_PERCENT)
        .values("job_id", "task_id")
        .annotate(count=Count("pk"))
    )
    for row in devices:
        idle[row["job_id"]][row["task_id"]] = row["count"]
    rows = jobs.values_list(
        "pk",
        "name",
        "slurm_id",
        "owner__username",
        "account__cluster__name",
        "account__cluster__policy__utilization_target_percent",
        "partition",
        "gpu_type",
        "gpus",
        "gpu_utilization",
        "started",
        "ended",
        "origin",
        "time_limit_seconds",
        "gpu_energy_j",
    )
    return [
        JobUse(
            pk=pk,
            name=name,
            slurm_id=slurm_id,
            owner=owner,
            cluster=cluster,
            partition=partition,
            gpu_type=gpu_type,
            gpus=gpus,
            utilization=utilization,
            target_percent=target or DEFAULT_TARGET_PERCENT,
            runs=runs.get(pk) or {"": (started, ended or now)},
            idle_gpus=idle.get(pk, {}),
            outside=origin == JobOrigin.OUTSIDE,
            time_limit_seconds=time_limit,
            energy_j=energy,
        )
        for (
            pk,
            name,
            slurm_id,
            owner,
            cluster,
            target,
            partition,
            gpu_type,
            gpus,
            utilization,
            started,
            ended,
            origin,
            time_limit,
            energy,
        ) in rows.order_by("pk")
    ]
