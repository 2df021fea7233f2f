"""Storing parsed sample lines: GPU devices, their samples (thinned past MAX_POINTS), each GPU's
mean, peak and energy, and each job's GPU utilization and energy."""

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.conf import settings
from django.db import models, transaction
from django.db.models import Count, Max, Q, Sum

from jobs.gpu.sample_lines import Chunk, Gpu, Sample, Summary
from jobs.gpu.thinning import AMOUNTS, MAX_POINTS, VALUES, Point, thin
from jobs.models import GpuDevice, GpuSample, Job, SampleFile

logger = logging.getLogger(__name__)


@dataclass
class Read:
    """What one poll read of one file: its row (unsaved while new), where the bytes began, and
    the row's offset when they were read (to tell whether another poll stored them first)."""

    file: SampleFile
    start: int
    chunk: Chunk
    read_at: int = 0


@dataclass
class Stored:
    files: int = 0
    samples: int = 0
    malformed: int = 0
    devices: set[int] = field(default_factory=set)


def _at(moment: float) -> datetime:
    return datetime.fromtimestamp(moment, UTC)


def _key(job_id: int, task_id: str, node: str, uuid: str) -> tuple:
    return (job_id, task_id, node, uuid)


@transaction.atomic
def store(reads: list[Read]) -> Stored:
    """Saves what `reads` parsed, and each file's new offset, in one transaction.

    Devices come from "gpu" lines (or from a sample of a GPU not described yet), samples are
    bulk-created, and each GPU's mean and peak and its job's mean are brought up to date from
    the new samples alone: the weights of what was stored before come from one grouped query.
    """
    stored = Stored()
    job_ids = {read.file.job_id for read in reads}
    if not job_ids:
        return stored
    # Another poll of the same login (a slow one overlapping the next) may have stored these
    # bytes already: keep only reads that start where the row still stands.
    current = {
        (row.job_id, row.path): row
        for row in SampleFile.objects.select_for_update().filter(job_id__in=job_ids)
    }
    fresh = []
    for read in reads:
        row = current.get((read.file.job_id, read.file.path))
        before = row.offset if row is not None else 0
        if (row is not None) != (read.file.pk is not None) or before != read.read_at:
            continue
        fresh.append(read)
    devices = {
        _key(d.job_id, d.task_id, d.node, d.uuid): d
        for d in GpuDevice.objects.filter(job_id__in=job_ids)
    }
    history = {
        row["device"]: row
        for row in GpuSample.objects.filter(device__job_id__in=job_ids)
        .values("device")
        .annotate(
            last=Max("at"),
            count=Count("pk"),
            weight=Sum("seconds", filter=Q(utilization__isnull=False)),
        )
    }
    last = {pk: row["last"] for pk, row in history.items()}
    weight = {pk: row["weight"] or 0.0 for pk, row in history.items()}
    count = {pk: row["count"] for pk, row in history.items()}
    changed: dict[int, GpuDevice] = {}
    samples: list[GpuSample] = []

    def device_for(file: SampleFile, uuid: str) -> GpuDevice:
        key = _key(file.job_id, file.task_id, file.node, uuid)
        if key not in devices:
            devices[key] = GpuDevice.objects.create(
                job_id=file.job_id, task_id=file.task_id, node=file.node, uuid=uuid
            )
        return devices[key]

    for read in fresh:
        file = read.file
        intervals: dict[str, float] = {}
        for line in read.chunk.lines:
            if isinstance(line, Gpu):
                device = device_for(file, line.uuid)
                device.index, device.name = line.index, line.name[:100]
                device.pci_bus_id, device.mig = line.pci_bus_id[:32], line.mig
                device.memory_total_mb = line.memory_total_mb
                changed[device.pk] = device
                if line.interval:
                    intervals[line.uuid] = line.interval
            elif isinstance(line, Sample):
                sample = _sample(device_for(file, line.uuid), line, intervals, last, weight)
                if sample is not None:
                    samples.append(sample)
                    changed[sample.device_id] = sample.device
                    count[sample.device_id] = count.get(sample.device_id, 0) + 1
            elif isinstance(line, Summary):
                device = device_for(file, line.uuid)
                if line.mean_utilization is not None:
                    device.mean_utilization = line.mean_utilization
                if line.peak_memory_used_mb is not None:
                    device.peak_memory_mb = max(
                        device.peak_memory_mb or 0.0, line.peak_memory_used_mb
                    )
                # The summary's energy covers the run from its start, the samples' from
                # interval to interval: it only stands in for samples that never reported any
                # (a run shorter than one interval). Added, a sampler started again on the same
                # GPU (a requeued run) would count the first run twice.
                if line.energy_j is not None and device.energy_j is None:
                    device.energy_j = line.energy_j
                changed[device.pk] = device
                file.finished = True
            else:
                file.note = line.reason or "The sampler could not sample this node's GPUs."
        file.offset = read.start + read.chunk.consumed
        stored.files += 1
        stored.malformed += read.chunk.malformed
        if read.chunk.malformed:
            logger.info("%s: %d malformed lines skipped", file.path, read.chunk.malformed)
    GpuSample.objects.bulk_create(samples, batch_size=500)
    _save_each(changed.values(), DEVICE_FIELDS)
    known_files = [read.file for read in fresh if read.file.pk is not None]
    SampleFile.objects.bulk_create([read.file for read in fresh if read.file.pk is None])
    _save_each(known_files, ["offset", "note", "finished"])
    for pk, device in changed.items():
        if count.get(pk, 0) > MAX_POINTS:
            _thin_device(device)
    _update_jobs({device.job_id for device in changed.values()}, devices.values(), weight)
    stored.samples = len(samples)
    stored.devices = set(changed)
    return stored


DEVICE_FIELDS = [
    "index", "name", "pci_bus_id", "mig", "memory_total_mb", "mean_utilization", "peak_memory_mb",
    "energy_j",
]  # fmt: skip


def _save_each(objects: Iterable[models.Model], fields: list[str]) -> None:
    # One UPDATE a row: Django's bulk_update builds a CASE per field and row, which costs more
    # (in Python) than it saves for the few hundred rows a poll changes (bench/samples.py).
    for instance in objects:
        type(instance).objects.filter(pk=instance.pk).update(
            **{name: getattr(instance, name) for name in fields}
        )


def _sample(
    device: GpuDevice,
    line: Sample,
    intervals: dict[str, float],
    last: dict[int, datetime],
    weight: dict[int, float],
) -> GpuSample | None:
    """The row for one sample line, and the device's mean and peak moved on by it."""
    at = _at(line.time)
    previous = last.get(device.pk)
    interval = intervals.get(device.uuid) or settings.SAMPLE_SECONDS
    if previous is None:
        seconds = interval
    elif at <= previous:
        return None  # read before (a file read again from its start): stored already
    else:
        # A gap (a suspended job, a stalled file system) counts as a few intervals at most, so
        # that one sample after it does not outweigh the rest.
        seconds = min((at - previous).total_seconds(), 3 * max(interval, settings.SAMPLE_SECONDS))
    last[device.pk] = at
    if line.utilization is not None:
        before = weight.get(device.pk, 0.0)
        mean = device.mean_utilization if device.mean_utilization is not None else 0.0
        total = before + seconds
        if total > 0:
            device.mean_utilization = (mean * before + line.utilization * seconds) / total
        else:
            device.mean_utilization = line.utilization
        weight[device.pk] = total
    if line.memory_used_mb is not None:
        device.peak_memory_mb = max(device.peak_memory_mb or 0.0, line.memory_used_mb)
    if device.memory_total_mb is None and line.memory_total_mb is not None:
        device.memory_total_mb = line.memory_total_mb
    if line.energy_j is not None:
        device.energy_j = (device.energy_j or 0.0) + line.energy_j
    return GpuSample(
        device=device,
        at=at,
        seconds=seconds,
        utilization=line.utilization,
        memory_used_mb=line.memory_used_mb,
        power_w=line.power_w,
        temperature_c=line.temperature_c,
        energy_j=line.energy_j,
    )


def _thin_device(device: GpuDevice) -> None:
    rows = list(device.samples.order_by("at", "pk"))
    points = [
        Point(
            r.pk,
            r.at,
            r.seconds,
            r.utilization,
            r.memory_used_mb,
            r.power_w,
            r.temperature_c,
            r.energy_j,
        )
        for r in rows
    ]
    kept = thin(points, MAX_POINTS)
    by_pk = {row.pk: row for row in rows}
    updated = []
    fields = ["seconds", *VALUES, *AMOUNTS]
    for point in kept:
        row = by_pk[point.pk]
        if any(getattr(row, name) != getattr(point, name) for name in fields):
            for name in fields:
                setattr(row, name, getattr(point, name))
            updated.append(row)
    GpuSample.objects.bulk_update(updated, fields, batch_size=500)
    gone = set(by_pk) - {point.pk for point in kept}
    GpuSample.objects.filter(pk__in=gone).delete()


def _update_jobs(job_ids: set[int], devices: Iterable[GpuDevice], weight: dict[int, float]) -> None:
    """Each job's GPU utilization (its GPUs' means weighted by the time each was known) and
    energy (its GPUs' added up, unknown while one GPU's is: never a part passed off as all)."""
    jobs = {pk: Job(pk=pk) for pk in job_ids}
    parts: dict[int, list[tuple[float, float]]] = {pk: [] for pk in job_ids}
    energy: dict[int, list[float | None]] = {pk: [] for pk in job_ids}
    for device in devices:
        if device.job_id in parts:
            energy[device.job_id].append(device.energy_j)
        if device.job_id in parts and device.mean_utilization is not None:
            parts[device.job_id].append((device.mean_utilization, weight.get(device.pk, 0.0)))
    for pk, known in parts.items():
        total = sum(seconds for _, seconds in known)
        if total > 0:
            jobs[pk].gpu_utilization = sum(mean * seconds for mean, seconds in known) / total
        elif known:  # means from summaries alone
            jobs[pk].gpu_utilization = sum(mean for mean, _ in known) / len(known)
        else:
            jobs[pk].gpu_utilization = None
        reported = [joules for joules in energy[pk] if joules is not None]
        whole = reported and len(reported) == len(energy[pk])
        jobs[pk].gpu_energy_j = sum(reported) if whole else None
    _save_each(jobs.values(), ["gpu_utilization", "gpu_energy_j"])
