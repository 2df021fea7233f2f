"""The efficiency report and the GPU panel of a job, from the database: the job's accounting,
its GPUs and samples, turned into the engine's facts (guidance.engine.efficiency judges them);
and Job.gpu_warning, kept up to date."""

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Max, Q, Sum
from django.utils import timezone

from guidance import engine
from guidance.engine.efficiency import (
    EachRun,
    EfficiencyReport,
    JobFacts,
    Usage,
    report,
    usage_of,
)
from guidance.engine.gpu_use import GpuAdvice, GpuUse, advise
from guidance.facts import cluster_facts
from guidance.models import Cluster, Policy
from jobs.gpu import chart
from jobs.models import GpuDevice, GpuSample, Job, JobState
from jobs.notify import record


def facts_of(job: Job, each_run: EachRun | None = None) -> JobFacts:
    """The report's facts; a sweep's runs (jobs.runs.listing.each_run) size its time per run."""
    facts = replace(_accounted(job), each_run=each_run)
    return facts if facts.gpu_type else replace(facts, gpu_type=_composed_gpu_type(job))


def usage(job: Job) -> Usage:
    """The jobs list's figures of a job: no query (facts_of may read its composition)."""
    return usage_of(_accounted(job))


def _accounted(job: Job) -> JobFacts:
    return JobFacts(
        gpus=job.gpus,
        cpus=job.cpus,
        elapsed_seconds=job.elapsed_seconds,
        time_limit_seconds=job.time_limit_seconds,
        cpu_seconds=job.cpu_seconds,
        max_rss_mb=job.max_rss_mb,
        requested_memory_mb=job.requested_memory_mb,
        gpu_type=job.gpu_type,
        timed_out=job.state == JobState.TIMEOUT,
        out_of_memory=job.state == JobState.OUT_OF_MEMORY,
        ended_early=job.is_final and job.state not in (JobState.COMPLETED, JobState.TIMEOUT),
        gpu_energy_j=job.gpu_energy_j,
        longest_task_seconds=job.longest_task_seconds,
        task_time_limit_seconds=job.task_time_limit_seconds,
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
    # Ordered here: a query with aggregates leaves Meta.ordering out.
    in_order = GpuDevice.objects.filter(job=job).order_by("task_id", "node", "index")
    devices = in_order.annotate(
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
                energy_j=None if since else d.energy_j,  # the whole run's only
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
        appeared = text and not job.gpu_warning
        job.gpu_warning = text
        with transaction.atomic():  # the warning and its notification, together
            job.save(update_fields=["gpu_warning"])
            if appeared:
                record.gpus_idle(job)
    return text


@dataclass(frozen=True)
class GpuPanel:
    """What the job page's GPU fragment shows."""

    uses: tuple[GpuUse, ...]
    advice: GpuAdvice
    chart: str
    notes: tuple[str, ...]
    warming_up: bool
    report: EfficiencyReport | None
    totals: Usage  # GPU-hours used and requested, and the GPUs' energy


def _cluster_facts(job: Job) -> engine.Cluster:
    return cluster_facts(Cluster.objects.with_facts().get(pk=job.account.cluster_id))


def job_report(job: Job, each_run: EachRun | None = None) -> EfficiencyReport:
    """The efficiency report of a job, final or not, from what is stored so far."""
    cluster = _cluster_facts(job)
    uses = gpu_uses(job, cluster.policy.utilization_target_percent)
    return report(facts_of(job, each_run), uses, cluster)


def final_report(job: Job, each_run: EachRun | None = None) -> EfficiencyReport | None:
    """The report the job page shows: once the job is final, with something to report."""
    if not job.is_final:
        return None
    cluster = _cluster_facts(job)
    uses = gpu_uses(job, cluster.policy.utilization_target_percent)
    return report(facts_of(job, each_run), uses, cluster) if _reportable(job, uses) else None


def _reportable(job: Job, uses: Sequence[GpuUse]) -> bool:
    return bool(job.is_final and (job.elapsed_seconds or uses))


def gpu_panel(job: Job, each_run: EachRun | None = None) -> GpuPanel:
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
    return GpuPanel(
        uses=tuple(uses),
        advice=advice,
        chart=usage_chart(job, uses),
        notes=notes,
        warming_up=bool(job.started and not job.is_final and ran < settings.GPU_WARMUP_SECONDS),
        report=report(facts_of(job, each_run), uses, cluster) if _reportable(job, uses) else None,
        totals=usage(job),
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
