"""How well a job used what it asked for, as seff reports it plus its GPUs, and what to ask for
next time. The report and its suggestions are pure; the functions at the end read the database
(the job's GPUs and samples) and keep Job.gpu_warning up to date."""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, Max, Q, Sum
from django.utils import timezone

from guidance import engine
from guidance.engine import sources
from guidance.engine.gpu_use import (
    FEWER_GPUS,
    GpuAdvice,
    GpuUse,
    advise,
    card_memory_gb,
    find_gpu_type,
    gpus_needed,
    mean_of,
    other_gpu_type,
    peak_memory_gb,
)
from guidance.engine.slurm_time import format_time
from guidance.engine.sources import Source
from guidance.facts import cluster_facts
from guidance.models import Cluster, Policy
from jobs.gpu import chart
from jobs.models import GpuDevice, GpuSample, Job, JobState

# A quarter more than the last run took: runs vary, and a job killed at its limit loses its work.
TIME_MARGIN = 1.25
# A job that ran out of time gets half as much again.
TIMEOUT_FACTOR = 1.5


@dataclass(frozen=True)
class JobFacts:
    """What Slurm accounted for a finished job (sacct)."""

    gpus: int | None = None
    cpus: int | None = None
    elapsed_seconds: int | None = None
    time_limit_seconds: int | None = None
    cpu_seconds: float | None = None
    max_rss_mb: float | None = None
    requested_memory_mb: float | None = None
    gpu_type: str = ""
    timed_out: bool = False


@dataclass(frozen=True)
class Suggestion:
    field: str  # the composer's field it changes
    value: str  # as the composer's form takes it
    change: str  # in a few words, for the button's list
    reason: str
    source: Source | None = None


@dataclass(frozen=True)
class Report:
    facts: JobFacts
    gpus: tuple[GpuUse, ...]
    target: int
    gpu_mean: float | None
    under_target_percent: float | None  # share of the sampled time under the target
    peak_memory_gb: float | None
    card_memory_gb: float | None
    cpu_percent: float | None
    memory_percent: float | None
    time_percent: float | None
    suggestions: tuple[Suggestion, ...]

    # As seff prints them: H:MM:SS.
    @property
    def elapsed(self) -> str:
        return clock(self.facts.elapsed_seconds)

    @property
    def time_limit(self) -> str:
        return clock(self.facts.time_limit_seconds)

    @property
    def cpu_time(self) -> str:
        return clock(self.facts.cpu_seconds)

    @property
    def core_walltime(self) -> str:
        return clock(_product(self.facts.cpus, self.facts.elapsed_seconds))


def report(facts: JobFacts, uses: Sequence[GpuUse], cluster: engine.Cluster) -> Report:
    target = cluster.policy.utilization_target_percent
    known = [u for u in uses if u.known]
    sampled = sum(u.seconds for u in known)
    return Report(
        facts=facts,
        gpus=tuple(uses),
        target=target,
        gpu_mean=mean_of(uses),
        under_target_percent=(
            100 * sum(u.under_seconds for u in known) / sampled if sampled else None
        ),
        peak_memory_gb=peak_memory_gb(uses),
        card_memory_gb=card_memory_gb(uses),
        cpu_percent=_percent(facts.cpu_seconds, _product(facts.cpus, facts.elapsed_seconds)),
        memory_percent=_percent(facts.max_rss_mb, facts.requested_memory_mb),
        time_percent=_percent(facts.elapsed_seconds, facts.time_limit_seconds),
        suggestions=tuple(suggest(facts, uses, cluster)),
    )


def suggest(facts: JobFacts, uses: Sequence[GpuUse], cluster: engine.Cluster) -> list[Suggestion]:
    """The next run's settings, each with its reason: time, GPU count, GPU type."""
    out = []
    if time := _time(facts):
        out.append(time)
    mean = mean_of(uses)
    target = cluster.policy.utilization_target_percent
    gpus = facts.gpus or sum(1 for u in uses if u.known)
    if mean is not None and gpus and mean < target:
        needed = gpus_needed(gpus, mean, target)
        if needed < gpus:
            out.append(
                Suggestion(
                    "gpu_count",
                    str(needed),
                    f"{needed} GPU{'s' if needed != 1 else ''} instead of {gpus}",
                    f"Its {gpus} GPUs were {mean:.0f}% busy on average: {needed} at {target}% "
                    "do the same work, and wait less in the queue.",
                    FEWER_GPUS,
                )
            )
        peak = peak_memory_gb(uses)
        if other := other_gpu_type(cluster, facts.gpu_type, peak):
            current = find_gpu_type(cluster, facts.gpu_type)
            used = (
                f", and its {other.memory_gb:g} GB hold the {peak:.0f} GB it used" if peak else ""
            )
            out.append(
                Suggestion(
                    "gpu_type",
                    other.name,
                    f"{other.name} instead of {current.name}",
                    f"{cluster.name} keeps {current.name} for jobs near 100% busy; at "
                    f"{mean:.0f}% this job belongs on {other.name}{used}.",
                    current.source or sources.PROCESSING_TRAINING,
                )
            )
    return out


def suggested_minutes(elapsed_seconds: float, margin: float = TIME_MARGIN) -> int:
    """elapsed x margin, rounded up to a quarter hour (to half hours past 2 hours, whole hours
    past 12): never less than the run took."""
    minutes = elapsed_seconds * margin / 60
    step = 15 if minutes <= 120 else 30 if minutes <= 720 else 60
    return max(step, math.ceil(round(minutes / step, 6)) * step)


def _time(facts: JobFacts) -> Suggestion | None:
    elapsed, limit = facts.elapsed_seconds, facts.time_limit_seconds
    if not elapsed or not limit:
        return None
    if facts.timed_out or elapsed >= limit:
        minutes = suggested_minutes(limit, TIMEOUT_FACTOR)
        return Suggestion(
            "hours",
            f"{minutes / 60:g}",
            f"--time={format_time(minutes * 60)} instead of {format_time(limit)}",
            f"It ran out of time after {format_time(limit)}: ask for half as much again, "
            "or save checkpoints and resume in a chain of shorter jobs.",
            sources.LONG_RUNNING,
        )
    minutes = suggested_minutes(elapsed)
    if minutes * 60 > limit * 0.8:
        return None  # close enough: not worth a change
    return Suggestion(
        "hours",
        f"{minutes / 60:g}",
        f"--time={format_time(minutes * 60)} instead of {format_time(limit)}",
        f"It ran {format_time(elapsed)} of the {format_time(limit)} it asked for: "
        f"{format_time(minutes * 60)} leaves a quarter more than it took, and shorter jobs are "
        "more likely to start sooner.",
        sources.CHECKPOINT_CHAIN,
    )


def clock(seconds: float | None) -> str:
    return "" if seconds is None else format_time(seconds)


def apply(fields: dict, suggestions: Sequence[Suggestion]) -> dict:
    """The composer's values with the suggestions in place."""
    return {**fields, **{s.field: s.value for s in suggestions}}


def _product(a: float | None, b: float | None) -> float | None:
    return a * b if a and b else None


def _percent(part: float | None, whole: float | None) -> float | None:
    return 100 * part / whole if part is not None and whole else None


# --- Reading the database -----------------------------------------------------------------


def facts_of(job: Job) -> JobFacts:
    return JobFacts(
        gpus=job.gpus,
        cpus=job.cpus,
        elapsed_seconds=job.elapsed_seconds,
        time_limit_seconds=job.time_limit_seconds,
        cpu_seconds=job.cpu_seconds,
        max_rss_mb=job.max_rss_mb,
        requested_memory_mb=job.requested_memory_mb,
        gpu_type=job.gpu_type or _composed_gpu_type(job),
        timed_out=job.state == JobState.TIMEOUT,
    )


def _composed_gpu_type(job: Job) -> str:
    # sacct names no GPU type where the cluster's gres has none: the composer's choice then.
    return (job.composition.fields.get("gpu_type") or "") if job.composition else ""


def ran_seconds(job: Job, now: datetime | None = None) -> float:
    if job.started is None:
        return 0
    if job.is_final and job.elapsed_seconds is not None:
        return job.elapsed_seconds
    return ((job.ended or now or timezone.now()) - job.started).total_seconds()


def warmup_ends(job: Job) -> datetime | None:
    return job.started + timedelta(seconds=settings.GPU_WARMUP_SECONDS) if job.started else None


def gpu_uses(job: Job, target: float, since: datetime | None = None) -> list[GpuUse]:
    """Each GPU's use from its samples after `since` (all of them when None): one query."""
    window = Q(samples__at__gt=since) if since else Q(samples__isnull=False)
    known = window & Q(samples__utilization__isnull=False)
    devices = GpuDevice.objects.filter(job=job).annotate(
        busy=Sum(F("samples__utilization") * F("samples__seconds"), filter=known),
        known_seconds=Sum("samples__seconds", filter=known),
        sampled_seconds=Sum("samples__seconds", filter=window),
        under_seconds=Sum("samples__seconds", filter=known & Q(samples__utilization__lt=target)),
        peak=Max("samples__memory_used_mb", filter=window),
    )
    uses = []
    for d in devices:
        if d.known_seconds:
            mean, seconds = d.busy / d.known_seconds, d.known_seconds
        elif since is None and d.mean_utilization is not None and not d.mig:
            # Only the sampler's summary line: its mean stands for the whole run.
            mean, seconds = d.mean_utilization, job.elapsed_seconds or 1
        else:
            mean, seconds = None, 0
        peaks = [m for m in (d.peak, None if since else d.peak_memory_mb) if m is not None]
        uses.append(
            GpuUse(
                node=d.node,
                index=d.index,
                name=d.name,
                mean=mean,
                seconds=seconds,
                sampled_seconds=d.sampled_seconds or 0,
                under_seconds=d.under_seconds or 0,
                mig=d.mig,
                memory_total_mb=d.memory_total_mb,
                peak_memory_mb=max(peaks) if peaks else None,
                task_id=d.task_id,
            )
        )
    return uses


def refresh_warning(job: Job, now: datetime | None = None) -> str:
    """Sets (and saves, when it changed) job.gpu_warning from the stored samples: nothing before
    the warm-up is over, else two queries (the policy, the GPUs' means since the warm-up)."""
    text = ""
    if ran_seconds(job, now) >= settings.GPU_WARMUP_SECONDS and job.started:
        policy = Policy.objects.filter(cluster__clusteraccount=job.account_id).first()
        cluster = engine.Cluster(
            slug="",
            name="",
            policy=engine.Policy(
                utilization_target_percent=policy.utilization_target_percent,
                cpus_per_gpu=policy.cpus_per_gpu,
            )
            if policy
            else engine.Policy(),
        )
        uses = gpu_uses(job, cluster.policy.utilization_target_percent, warmup_ends(job))
        text = advise(
            uses,
            cluster,
            ran_seconds=ran_seconds(job, now),
            warmup_seconds=settings.GPU_WARMUP_SECONDS,
        ).text
    if text != job.gpu_warning:
        job.gpu_warning = text
        job.save(update_fields=["gpu_warning"])
    return text


@dataclass(frozen=True)
class GpuPanel:
    """What the job page's GPU fragment shows."""

    uses: tuple[GpuUse, ...]
    advice: GpuAdvice
    chart: str
    notes: tuple[str, ...]
    warming_up: bool
    report: Report | None


def _cluster_facts(job: Job) -> engine.Cluster:
    return cluster_facts(Cluster.objects.with_facts().get(pk=job.account.cluster_id))


def job_report(job: Job) -> Report:
    """The efficiency report of a job, final or not, from what is stored so far."""
    cluster = _cluster_facts(job)
    uses = gpu_uses(job, cluster.policy.utilization_target_percent)
    return report(facts_of(job), uses, cluster)


def gpu_panel(job: Job) -> GpuPanel:
    cluster = _cluster_facts(job)
    target = cluster.policy.utilization_target_percent
    uses = gpu_uses(job, target)
    ran = ran_seconds(job)
    since = warmup_ends(job)
    recent = gpu_uses(job, target, since) if since and ran >= settings.GPU_WARMUP_SECONDS else []
    advice = advise(
        recent or uses,
        cluster,
        ran_seconds=ran if recent else 0,
        warmup_seconds=settings.GPU_WARMUP_SECONDS,
        cpus=job.cpus,
        gpu_type=facts_of(job).gpu_type,
    )
    notes = tuple(
        f"{f.node}: {f.note}" if f.node else f.note
        for f in job.sample_files.exclude(note="").order_by("node")
    )
    final = job.is_final and (job.elapsed_seconds or uses)
    return GpuPanel(
        uses=tuple(uses),
        advice=advice,
        chart=usage_chart(job, uses),
        notes=notes,
        warming_up=bool(job.started and not job.is_final and ran < settings.GPU_WARMUP_SECONDS),
        report=report(facts_of(job), uses, cluster) if final else None,
    )


def usage_chart(job: Job, uses: Sequence[GpuUse]) -> str:
    """The chart of every sample of the job's GPUs (two queries), or "" before the first."""
    devices = list(GpuDevice.objects.filter(job=job))
    rows = GpuSample.objects.filter(device__job=job).order_by("device", "at")
    points: dict[int, list[tuple]] = {d.pk: [] for d in devices}
    for row in rows.values_list("device_id", "at", "seconds", "utilization", "memory_used_mb"):
        points[row[0]].append(row[1:])
    if not any(points.values()):
        return ""
    start = job.started or min(
        at - timedelta(seconds=s) for p in points.values() for at, s, *_ in p[:1]
    )
    by_key = {(u.task_id, u.node, u.index, u.name): u for u in uses}
    series = []
    for d in devices:
        use = by_key.get((d.task_id, d.node, d.index, d.name))
        series.append(
            chart.Series(
                label=use.label if use else str(d),
                name=d.name,
                memory_total_mb=d.memory_total_mb,
                mean=use.mean if use else None,
                peak_memory_mb=use.peak_memory_mb if use else d.peak_memory_mb,
                points=chart.downsample(
                    [
                        chart.Point((at - start).total_seconds(), s, util, mem)
                        for at, s, util, mem in points[d.pk]
                    ]
                ),
            )
        )
    return chart.render(series, title=f"GPU use of {job.name}", duration=ran_seconds(job))
