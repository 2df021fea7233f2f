"""GPU samples: what the sampler inside each GPU job writes, read while the job runs, and stored.

The sampler (jobs/gpu/sampler/portal_gpu_sampler.py) appends JSON lines to one file per node,
`<job dir>/gpu-<label>.<node>.jsonl` in the login's home, where the label is the Slurm id, or
`<array id>_<task>` for a part of an array. Each poll reads what each file gained since the last
one, from the offset its SampleFile row keeps, over the login's one SFTP session: no command
runs, however many jobs there are. A partial last line stays for the next poll.

parse() is pure; store() saves parsed lines; collect() is what the poll calls.
"""

import itertools
import json
import logging
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import models, transaction
from django.db.models import Count, Max, Q, Sum
from django.utils import timezone

from jobs.cluster import remote
from jobs.cluster.gateway import gateway
from jobs.gpu import efficiency
from jobs.models import ClusterAccount, GpuDevice, GpuSample, Job, JobState, JobTask, SampleFile

logger = logging.getLogger(__name__)

READ_CAP = (
    256 * 1024
)  # bytes per file per poll: a backlog (a portal that was down) drains over polls
# A job's last lines (the summary) may reach the login node after Slurm says the job ended (file
# systems cache): its files are read until each has its summary, for at most this long.
FINAL_READ_SECONDS = 300
MAX_POINTS = 720  # samples kept per GPU per job part (see thin())

# -- parsing ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gpu:
    time: float
    node: str
    uuid: str
    index: int | None
    name: str
    pci_bus_id: str
    memory_total_mb: float | None
    mig: bool
    interval: float | None


@dataclass(frozen=True)
class Sample:
    time: float
    uuid: str
    utilization: float | None  # None: unknown (a MIG slice), never 0
    memory_used_mb: float | None
    memory_total_mb: float | None
    power_w: float | None
    temperature_c: float | None


@dataclass(frozen=True)
class Summary:
    time: float
    uuid: str
    samples: int | None
    mean_utilization: float | None
    peak_memory_used_mb: float | None
    stopped_by: str


@dataclass(frozen=True)
class Unavailable:
    time: float
    node: str
    reason: str


type Line = Gpu | Sample | Summary | Unavailable


@dataclass(frozen=True)
class Chunk:
    """The complete lines of some bytes, parsed. `consumed` bytes are done with: everything up to
    the last newline; the partial line after it waits for the rest."""

    lines: list[Line]
    consumed: int
    malformed: int


def _number(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"not a number: {value!r}")
    return float(value)


def _required_number(value: object) -> float:
    number = _number(value)
    if number is None:
        raise ValueError("a number is required")
    return number


def _text(value: object, required: bool = False) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value):
        raise ValueError(f"not a text: {value!r}")
    return value


def _count(value: object, below: float = math.inf) -> int | None:
    number = _number(value)
    if number is not None and not (0 <= number < below):
        raise ValueError(f"not a count: {value!r}")
    return None if number is None else int(number)


def parse_line(text: str) -> Line:
    """One sampler line; ValueError when it is not one (bad JSON, a missing or mistyped key)."""
    record = json.loads(text)
    if not isinstance(record, dict):
        raise ValueError("not an object")
    kind = record.get("type")
    moment = _required_number(record.get("time"))
    if kind == "sample":
        return Sample(
            time=moment,
            uuid=_text(record.get("uuid"), required=True),
            utilization=_number(record.get("utilization")),
            memory_used_mb=_number(record.get("memory_used_mb")),
            memory_total_mb=_number(record.get("memory_total_mb")),
            power_w=_number(record.get("power_w")),
            temperature_c=_number(record.get("temperature_c")),
        )
    if kind == "gpu":
        return Gpu(
            time=moment,
            node=_text(record.get("node")),
            uuid=_text(record.get("uuid"), required=True),
            index=_count(record.get("index"), below=2**15),  # a small integer field
            name=_text(record.get("name")),
            pci_bus_id=_text(record.get("pci_bus_id")),
            memory_total_mb=_number(record.get("memory_total_mb")),
            mig=bool(record.get("mig")),
            interval=_number(record.get("interval")),
        )
    if kind == "summary":
        return Summary(
            time=moment,
            uuid=_text(record.get("uuid"), required=True),
            samples=_count(record.get("samples")),
            mean_utilization=_number(record.get("mean_utilization")),
            peak_memory_used_mb=_number(record.get("peak_memory_used_mb")),
            stopped_by=_text(record.get("stopped_by")),
        )
    if kind == "unavailable":
        return Unavailable(
            time=moment, node=_text(record.get("node")), reason=_text(record.get("reason"))
        )
    raise ValueError(f"unknown type {kind!r}")


def parse(data: bytes, limit: int | None = None) -> Chunk:
    """The complete lines of `data`; a malformed one is skipped and counted.

    `limit`: the most bytes one read returns. A read that full without a newline holds a line
    too long ever to fit one: it is skipped whole rather than waited for forever.
    """
    end = data.rfind(b"\n") + 1
    if end == 0:
        too_long = limit is not None and len(data) >= limit
        return Chunk([], len(data), 1) if too_long else Chunk([], 0, 0)
    lines: list[Line] = []
    malformed = 0
    for raw in data[:end].splitlines():
        if not raw.strip():
            continue
        try:
            lines.append(parse_line(raw.decode()))
        except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError included
            malformed += 1
    return Chunk(lines, end, malformed)


# -- thinning ---------------------------------------------------------------------------------


@dataclass
class Point:
    """A stored sample as thin() sees it; `pk` None for one not saved yet."""

    pk: int | None
    at: datetime
    seconds: float
    utilization: float | None
    memory_used_mb: float | None
    power_w: float | None
    temperature_c: float | None


VALUES = ("utilization", "memory_used_mb", "power_w", "temperature_c")


def merge(older: Point, newer: Point) -> Point:
    """One point for two neighbours: their spans add up, each value is their time-weighted mean
    over the ones that know it (None stays None only when neither knows it)."""
    values = {}
    for name in VALUES:
        known = [
            (getattr(p, name), p.seconds) for p in (older, newer) if getattr(p, name) is not None
        ]
        weight = sum(seconds for _, seconds in known)
        if not known:
            values[name] = None
        elif weight > 0:
            values[name] = sum(value * seconds for value, seconds in known) / weight
        else:
            values[name] = sum(value for value, _ in known) / len(known)
    return replace(newer, seconds=older.seconds + newer.seconds, **values)


def thin(points: list[Point], bound: int = MAX_POINTS) -> list[Point]:
    """At most `bound` points, oldest first, for a GPU's stored samples (oldest first).

    Past the bound, neighbours are merged in pairs (merge()) down to three quarters of it, so
    that thinning runs once per bound/4 new samples, not on every poll. Finest pairs first
    (the smallest summed span, with a quarter's slack for the sampler's jitter), oldest first
    among them: raw 10 s samples become 20 s ones from the start of the job on, and only when
    all are 20 s do 40 s ones appear. The resolution stays even over the whole run, within a
    factor of two, with the newest samples the finest, and time-weighted means do not change.
    """
    if len(points) <= bound:
        return points
    target = bound * 3 // 4
    points = list(points)
    while len(points) > target and len(points) > 1:
        finest = min(a.seconds + b.seconds for a, b in itertools.pairwise(points))
        limit = finest * 1.25
        merged: list[Point] = []
        excess = len(points) - target
        index = 0
        while index < len(points):
            pair = points[index : index + 2]
            if excess > 0 and len(pair) == 2 and pair[0].seconds + pair[1].seconds <= limit:
                merged.append(merge(*pair))
                excess -= 1
                index += 2
            else:
                merged.append(points[index])
                index += 1
        points = merged
    return points


# -- storing ----------------------------------------------------------------------------------


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
    return GpuSample(
        device=device,
        at=at,
        seconds=seconds,
        utilization=line.utilization,
        memory_used_mb=line.memory_used_mb,
        power_w=line.power_w,
        temperature_c=line.temperature_c,
    )


def _thin_device(device: GpuDevice) -> None:
    rows = list(device.samples.order_by("at", "pk"))
    points = [
        Point(r.pk, r.at, r.seconds, r.utilization, r.memory_used_mb, r.power_w, r.temperature_c)
        for r in rows
    ]
    kept = thin(points, MAX_POINTS)
    by_pk = {row.pk: row for row in rows}
    updated = []
    fields = ["seconds", *VALUES]
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
    """Each job's GPU utilization: its GPUs' means weighted by the time each was known."""
    jobs = {pk: Job(pk=pk) for pk in job_ids}
    parts: dict[int, list[tuple[float, float]]] = {pk: [] for pk in job_ids}
    for device in devices:
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
    _save_each(jobs.values(), ["gpu_utilization"])


# -- collecting -------------------------------------------------------------------------------


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


def parts_to_read(account: ClusterAccount, jobs: Iterable[Job], now: datetime) -> list[Part]:
    """The jobs and tasks whose files may have new lines: running ones, ones that ended since
    the last poll, and ones that ended lately with a file that has not given its summary yet."""
    cutoff = now - timedelta(seconds=FINAL_READ_SECONDS)
    chosen = {
        job.pk: job
        for job in jobs
        if job.slurm_id and (job.state in STILL_SAMPLED or _just_ended(job, now))
    }
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


def collect(account: ClusterAccount, jobs: Iterable[Job], now: datetime | None = None) -> Collected:
    """Reads and stores the new lines of the sample files of `account`'s jobs (see
    parts_to_read()), at most READ_CAP bytes a file. A file not there (yet) is skipped quietly.
    Cluster errors (ClusterError) propagate: nothing is stored then, and the next poll retries."""
    now = now or timezone.now()
    parts = parts_to_read(account, jobs, now)
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
                listed[part.job.pk] = gateway.list_dir(login, part.job.job_dir)
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
    answers = gateway.read_many(login, [(row.path, row.offset) for row in wanted], READ_CAP)
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
