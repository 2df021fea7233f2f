"""GPU samples: parsing the sampler's lines, storing them, thinning, and reading them from the
local cluster while jobs run."""

import io
import json
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from guidance.models import Cluster
from jobs.cluster import keys, remote, tasks
from jobs.cluster.errors import ClusterError, ErrorKind
from jobs.cluster.gateway import gateway
from jobs.gpu import samples as gpu_samples
from jobs.gpu.samples import Chunk, Gpu, Point, Read, Sample, Summary, Unavailable, parse, thin
from jobs.models import ClusterAccount, GpuDevice, GpuSample, Job, JobState, JobTask, SampleFile

T0 = 1_700_000_000.0


def gpu_line(uuid: str = "GPU-a", index: int = 0, mig: bool = False, node: str = "n1") -> dict:
    return {
        "type": "gpu", "time": T0, "node": node, "uuid": uuid, "index": index,
        "name": "NVIDIA A100-SXM4-40GB", "pci_bus_id": "00000000:07:00.0",
        "memory_total_mb": 40960.0, "mig": mig, "interval": 10, "source": "nvml",
    }  # fmt: skip


def sample_line(t: float, utilization: float | None, uuid: str = "GPU-a", memory=1000.0) -> dict:
    return {
        "type": "sample", "time": T0 + t, "uuid": uuid, "utilization": utilization,
        "memory_used_mb": memory, "memory_total_mb": 40960.0, "power_w": 250.5,
        "temperature_c": 61.0,
    }  # fmt: skip


def lines(*records: dict) -> bytes:
    return b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in records)


# -- parsing ----------------------------------------------------------------------------------


def test_it_parses_every_kind_of_line() -> None:
    data = lines(
        gpu_line(),
        sample_line(10, 87.5),
        {"type": "summary", "time": T0 + 20, "uuid": "GPU-a", "samples": 2,
         "mean_utilization": 87.5, "peak_memory_used_mb": 1000, "stopped_by": "SIGTERM"},
        {"type": "unavailable", "time": T0, "node": "n2", "reason": "no NVML"},
    )  # fmt: skip
    chunk = parse(data)
    assert chunk.consumed == len(data) and chunk.malformed == 0
    gpu, sample, summary, unavailable = chunk.lines
    assert gpu == Gpu(
        T0, "n1", "GPU-a", 0, "NVIDIA A100-SXM4-40GB", "00000000:07:00.0", 40960.0, False, 10.0
    )
    assert sample == Sample(T0 + 10, "GPU-a", 87.5, 1000.0, 40960.0, 250.5, 61.0)
    assert summary == Summary(T0 + 20, "GPU-a", 2, 87.5, 1000.0, "SIGTERM")
    assert unavailable == Unavailable(T0, "n2", "no NVML")


def test_a_partial_last_line_is_left_for_next_time() -> None:
    whole = lines(sample_line(10, 50), sample_line(20, 60))
    cut = len(whole) - 7
    chunk = parse(whole[:cut])
    assert [line.time for line in chunk.lines] == [T0 + 10]
    assert chunk.consumed == whole.index(b"\n") + 1
    rest = parse(whole[chunk.consumed :])
    assert [line.time for line in rest.lines] == [T0 + 20]
    assert chunk.consumed + rest.consumed == len(whole)


def test_a_malformed_line_is_skipped_and_counted() -> None:
    data = b"".join(
        [
            lines(sample_line(10, 50)),
            b"{not json\n",
            b'["a list"]\n',
            b'{"type": "sample", "uuid": "GPU-a"}\n',  # no time
            b'{"type": "sample", "time": 1, "uuid": "GPU-a", "utilization": "high"}\n',
            b'{"type": "sample", "time": 1, "uuid": "GPU-a", "utilization": true}\n',
            b'{"type": "gpu", "time": 1, "uuid": "GPU-a", "index": -1}\n',
            b'{"type": "weather", "time": 1}\n',
            b'{"type": "sample", "time": NaN, "uuid": "GPU-a"}\n',
            b"\xff\xfe broken utf-8\n",
            b"[" * 100_000 + b"\n",
            b"\n",  # blank: not counted
            lines(sample_line(20, 60)),
        ]
    )
    chunk = parse(data)
    assert [line.time for line in chunk.lines] == [T0 + 10, T0 + 20]
    assert chunk.malformed == 10 and chunk.consumed == len(data)


def test_unicode_is_read_whole() -> None:
    data = lines({**gpu_line(), "name": "Tesla ✓ ünï"}, sample_line(10, 1))
    (gpu, _) = parse(data).lines
    assert gpu.name == "Tesla ✓ ünï"
    # Cut inside the ✓: the line waits, and no half character is decoded.
    cut = data.index("✓".encode()) + 1
    assert parse(data[:cut]) == Chunk([], 0, 0)


def test_empty_input_consumes_nothing() -> None:
    assert parse(b"") == Chunk([], 0, 0)
    assert parse(b'{"type": "sam') == Chunk([], 0, 0)


def test_a_line_longer_than_a_whole_read_is_skipped() -> None:
    assert parse(b"x" * 100, limit=100) == Chunk([], 100, 1)
    assert parse(b"x" * 99, limit=100) == Chunk([], 0, 0)


# -- thinning ---------------------------------------------------------------------------------


def _points(count: int, seconds: float = 10.0) -> list[Point]:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    return [
        Point(
            i,
            start + timedelta(seconds=seconds * (i + 1)),
            seconds,
            float(i % 100),
            1.0 * i,
            None,
            60.0,
        )
        for i in range(count)
    ]


def _weighted_mean(points: list[Point]) -> float:
    known = [p for p in points if p.utilization is not None]
    return sum(p.utilization * p.seconds for p in known) / sum(p.seconds for p in known)


def test_thinning_keeps_the_bound_and_the_means() -> None:
    points = _points(721)
    kept = thin(points, bound=720)
    assert len(kept) == 540
    assert sum(p.seconds for p in kept) == sum(p.seconds for p in points)
    assert _weighted_mean(kept) == pytest.approx(_weighted_mean(points))
    # The oldest were merged, the newest are as sampled; times stay in order.
    assert kept[0].seconds == 20 and kept[-1] == points[-1]
    assert [p.at for p in kept] == sorted(p.at for p in kept)
    assert kept[0].at == points[1].at and kept[0].power_w is None


def test_thinning_again_and_again_keeps_the_resolution_even() -> None:
    points: list[Point] = []
    for batch in range(40):  # 40 polls of 100 samples: 4,000 samples, a long job
        start = len(points) and points[-1].at
        new = _points(100)
        for i, p in enumerate(new):
            p.pk = batch * 100 + i
            p.at = (start or new[0].at) + timedelta(seconds=10 * (i + 1))
        points = thin([*points, *new], bound=720)
        assert len(points) <= 720
    widths = {p.seconds for p in points}
    assert max(widths) <= 2 * min(widths)  # within a factor of two over the whole run
    assert sum(p.seconds for p in points) == 40_000


def test_merging_ignores_unknown_utilization() -> None:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    a = Point(1, start, 10, None, 100.0, None, None)
    b = Point(2, start + timedelta(seconds=10), 30, 80.0, 200.0, None, None)
    merged = gpu_samples.merge(a, b)
    assert (merged.pk, merged.at, merged.seconds) == (2, b.at, 40)
    assert merged.utilization == 80.0  # not (0 * 10 + 80 * 30) / 40
    assert merged.memory_used_mb == 175.0 and merged.power_w is None


# -- storing ----------------------------------------------------------------------------------


@pytest.fixture
def job(user, seeded) -> Job:
    pair = keys.generate_keypair()
    account = ClusterAccount.objects.create(
        owner=user,
        cluster=Cluster.objects.get(slug="narval"),
        username="alice",
        public_key=pair.public_line,
        private_key_encrypted=keys.encrypt(pair.private_pem),
    )
    return Job.objects.create(
        owner=user, account=account, name="train", script="#!/bin/bash\n", slurm_id="77",
        state=JobState.RUNNING, nodes="n1",
    )  # fmt: skip


def _read(job: Job, data: bytes, node: str = "n1", task_id: str = "") -> Read:
    label = f"77_{task_id}" if task_id else "77"
    path = f"{job.job_dir}/gpu-{label}.{node}.jsonl"
    file = SampleFile.objects.filter(job=job, path=path).first() or SampleFile(
        job=job, task_id=task_id, node=node, path=path
    )
    return Read(file, file.offset, parse(data), read_at=file.offset)


def test_it_stores_devices_samples_and_means(job: Job) -> None:
    data = lines(
        gpu_line("GPU-a", 0),
        gpu_line("GPU-b", 1),
        sample_line(10, 100.0, "GPU-a", memory=2000),
        sample_line(10, 0.0, "GPU-b"),
        sample_line(20, 50.0, "GPU-a", memory=1500),
        sample_line(20, 0.0, "GPU-b"),
    )
    stored = gpu_samples.store([_read(job, data)])
    assert stored.samples == 4 and stored.files == 1
    a, b = GpuDevice.objects.filter(job=job).order_by("index")
    assert (a.uuid, a.name, a.index, a.memory_total_mb) == (
        "GPU-a",
        "NVIDIA A100-SXM4-40GB",
        0,
        40960,
    )
    assert a.mean_utilization == 75.0 and a.peak_memory_mb == 2000
    assert b.mean_utilization == 0.0
    job.refresh_from_db()
    assert job.gpu_utilization == 37.5
    file = SampleFile.objects.get(job=job)
    assert (file.offset, file.node, file.finished) == (len(data), "n1", False)
    first = a.samples.first()
    assert first.at == datetime.fromtimestamp(T0 + 10, UTC) and first.seconds == 10
    assert (first.utilization, first.power_w, first.temperature_c) == (100.0, 250.5, 61.0)

    # The next poll moves the means on from the new samples alone.
    more = lines(sample_line(30, 0.0, "GPU-a"), sample_line(30, 30.0, "GPU-b"))
    gpu_samples.store([_read(job, more)])
    a.refresh_from_db()
    b.refresh_from_db()
    assert a.mean_utilization == pytest.approx(50.0) and b.mean_utilization == pytest.approx(10.0)
    job.refresh_from_db()
    assert job.gpu_utilization == pytest.approx(30.0)
    assert SampleFile.objects.get(job=job).offset == len(data) + len(more)


def test_a_mig_slice_is_unknown_not_idle(job: Job) -> None:
    data = lines(
        gpu_line("MIG-a", 0, mig=True),
        gpu_line("GPU-b", 1),
        sample_line(10, None, "MIG-a"),
        sample_line(10, 80.0, "GPU-b"),
        sample_line(20, None, "MIG-a"),
        sample_line(20, 60.0, "GPU-b"),
    )
    gpu_samples.store([_read(job, data)])
    mig = GpuDevice.objects.get(uuid="MIG-a")
    assert mig.mig and mig.mean_utilization is None and mig.peak_memory_mb == 1000
    assert mig.samples.filter(utilization=None).count() == 2
    job.refresh_from_db()
    assert job.gpu_utilization == 70.0  # the GPU's alone, not (0 + 70) / 2


def test_only_unknown_utilization_leaves_the_job_unknown(job: Job) -> None:
    gpu_samples.store([_read(job, lines(gpu_line(mig=True), sample_line(10, None)))])
    job.refresh_from_db()
    assert job.gpu_utilization is None


def test_unavailable_is_noted_and_summary_finishes_the_file(job: Job) -> None:
    unavailable = {"type": "unavailable", "time": T0, "node": "n2", "reason": "nvidia-smi missing"}
    gpu_samples.store([_read(job, lines(unavailable), node="n2")])
    assert SampleFile.objects.get(node="n2").note == "nvidia-smi missing"

    summary = {
        "type": "summary", "time": T0 + 30, "uuid": "GPU-a", "samples": 2,
        "mean_utilization": 42.0, "peak_memory_used_mb": 3000.0, "stopped_by": "SIGTERM",
    }  # fmt: skip
    data = lines(gpu_line(), sample_line(10, 40.0), sample_line(20, 40.0), summary)
    gpu_samples.store([_read(job, data)])
    device = GpuDevice.objects.get(uuid="GPU-a")
    assert device.mean_utilization == 42.0 and device.peak_memory_mb == 3000.0
    assert SampleFile.objects.get(node="n1").finished
    job.refresh_from_db()
    assert job.gpu_utilization == 42.0


def test_samples_read_again_are_not_stored_twice(job: Job) -> None:
    data = lines(gpu_line(), sample_line(10, 40.0), sample_line(20, 40.0))
    gpu_samples.store([_read(job, data)])
    # The file was replaced with the same start (a requeue): read from 0 again.
    file = SampleFile.objects.get()
    again = Read(file, 0, parse(data + lines(sample_line(30, 10.0))), read_at=file.offset)
    assert gpu_samples.store([again]).samples == 1
    assert GpuSample.objects.count() == 3


def test_bytes_another_poll_stored_first_are_not_stored_again(job: Job) -> None:
    data = lines(gpu_line(), sample_line(10, 40.0))
    first, second = _read(job, data), _read(job, data)  # two overlapping polls read the same
    gpu_samples.store([first])
    assert gpu_samples.store([second]).samples == 0
    file = SampleFile.objects.get()
    stale = Read(file, 0, parse(data), read_at=0)  # a read from before the first poll saved
    assert gpu_samples.store([stale]).samples == 0
    assert GpuSample.objects.count() == 1


def test_a_gpu_keeps_at_most_the_bound_of_samples(job: Job, monkeypatch) -> None:
    monkeypatch.setattr(gpu_samples, "MAX_POINTS", 40)
    utilizations = [float(i % 7 * 10) for i in range(100)]
    for start in range(0, 100, 10):
        batch = [sample_line(10 * (i + 1), utilizations[i]) for i in range(start, start + 10)]
        gpu_samples.store([_read(job, lines(gpu_line(), *batch) if start == 0 else lines(*batch))])
        assert GpuSample.objects.count() <= 40
    device = GpuDevice.objects.get()
    rows = list(device.samples.all())
    assert sum(r.seconds for r in rows) == 1000
    exact = sum(utilizations) / len(utilizations)
    stored = sum(r.utilization * r.seconds for r in rows) / 1000
    assert stored == pytest.approx(exact) and device.mean_utilization == pytest.approx(exact)
    assert rows[-1].seconds == 10 and rows[0].seconds > 10  # newest kept as sampled


# -- choosing what to read --------------------------------------------------------------------


def test_it_reads_running_jobs_and_lately_ended_unfinished_ones(job: Job) -> None:
    now = timezone.now()
    account = job.account

    def make(state: str, ended_ago: float | None = None, started: bool = True) -> Job:
        return Job.objects.create(
            owner=job.owner, account=account, name="x", script="",
            slurm_id=str(uuid.uuid4().int)[:6], state=state, nodes="n1,n2",
            started=now - timedelta(hours=1) if started else None,
            ended=now - timedelta(seconds=ended_ago) if ended_ago is not None else None,
        )  # fmt: skip

    pending = make(JobState.PENDING, started=False)
    just_ended = make(JobState.COMPLETED, 5)
    old_unfinished = make(JobState.FAILED, 60)
    SampleFile.objects.create(job=old_unfinished, node="n1", path="a", finished=False)
    old_finished = make(JobState.COMPLETED, 60)
    SampleFile.objects.create(job=old_finished, node="n1", path="a", finished=True)
    too_old = make(JobState.COMPLETED, gpu_samples.FINAL_READ_SECONDS + 60)
    SampleFile.objects.create(job=too_old, node="n1", path="a", finished=False)
    chain = make(JobState.RUNNING)
    for task_id, state, ended in (("1", JobState.COMPLETED, 10), ("2", JobState.RUNNING, None)):
        JobTask.objects.create(
            job=chain, task_id=task_id, slurm_id=f"{chain.slurm_id}_{task_id}", state=state,
            started=now, ended=now - timedelta(seconds=ended) if ended else None,
        )  # fmt: skip
    JobTask.objects.create(job=chain, task_id="0", slurm_id="x", state=JobState.COMPLETED,
                           started=now, ended=now - timedelta(hours=1))  # fmt: skip

    parts = gpu_samples.parts_to_read(account, [job, pending, just_ended, chain], now)
    chosen = {(p.job.pk, p.task_id, p.nodes) for p in parts}
    assert chosen == {
        (job.pk, "", ("n1",)),
        (just_ended.pk, "", ("n1", "n2")),
        (old_unfinished.pk, "", ("n1", "n2")),
        (chain.pk, "1", None),
        (chain.pk, "2", None),
    }


def test_a_cluster_error_in_collect_does_not_break_the_poll(job, monkeypatch, caplog) -> None:
    from jobs.cluster.remote import Snapshot

    monkeypatch.setattr(remote, "poll", lambda *args: Snapshot([], []))

    def broken(account, jobs):
        raise ClusterError(ErrorKind.DISCONNECTED, "The connection was lost.", retryable=True)

    monkeypatch.setattr(gpu_samples, "collect", broken)
    Job.objects.filter(pk=job.pk).update(submitted=timezone.now())
    tasks.poll_clusters.apply()
    job.refresh_from_db()
    assert not job.stale and job.polled is not None
    assert "GPU samples of alice@narval not read: The connection was lost." in caplog.text


# -- on the local cluster ---------------------------------------------------------------------


@pytest.fixture
def account(devcluster, seeded, user) -> ClusterAccount:
    call_command("register_devcluster", user.username, stdout=io.StringIO())
    return ClusterAccount.objects.get(owner=user, cluster__slug="local")


def test_it_reads_a_growing_file_once_over_sftp(account) -> None:
    name = f"t-{uuid.uuid4().hex[:8]}"
    job = Job.objects.create(
        owner=account.owner, account=account, name=name, script="", slurm_id="990001",
        state=JobState.RUNNING, nodes="a100-1,a100-2",
    )  # fmt: skip
    login = remote.login_for(account)
    gateway.mkdirs(login, job.job_dir)
    path = f"{job.job_dir}/gpu-990001.a100-1.jsonl"
    whole = lines(gpu_line(node="a100-1"), *(sample_line(10 * i, 10.0 * i) for i in range(1, 9)))
    cut = whole.rindex(b"\n", 0, len(whole) - 1) + 20  # inside the last line
    gateway.write_file(login, path, whole[:cut])

    first = gpu_samples.collect(account, [job])
    assert first.files == 2  # a100-2's file is not there: silently nothing
    file = SampleFile.objects.get(job=job)
    assert file.offset == whole.rindex(b"\n", 0, len(whole) - 1) + 1
    assert GpuSample.objects.count() == 7

    gateway.write_file(login, path, whole)
    assert gpu_samples.collect(account, [job]).stored.samples == 1
    assert gpu_samples.collect(account, [job]).bytes == 0  # nothing new: nothing read
    file.refresh_from_db()
    assert file.offset == len(whole)
    stored = GpuSample.objects.order_by("at")
    assert [s.utilization for s in stored] == [10.0 * i for i in range(1, 9)]
    job.refresh_from_db()
    assert job.gpu_utilization == pytest.approx(45.0)


def test_a_polled_job_has_its_gpu_samples_stored(account) -> None:
    # The job writes what the sampler would, then its summary, then ends.
    name = f"t-{uuid.uuid4().hex[:8]}"
    sample = json.dumps(sample_line(10, 55.0))
    summary = json.dumps({"type": "summary", "time": T0 + 20, "uuid": "GPU-a", "samples": 1,
                          "mean_utilization": 55.0, "peak_memory_used_mb": 1000.0,
                          "stopped_by": "end"})  # fmt: skip
    body = (
        f"f=portal-jobs/{name}/gpu-$SLURM_JOB_ID.$SLURMD_NODENAME.jsonl\n"
        f"echo {json.dumps(json.dumps(gpu_line()))} >> $f\n"
        f"echo {json.dumps(sample)} >> $f\n"
        "sleep 3\n"
        f"echo {json.dumps(summary)} >> $f\n"
    )
    script = "\n".join(
        ["#!/bin/bash", f"#SBATCH --output=portal-jobs/{name}/slurm-%j.out",
         "#SBATCH --time=00:02:00", body]
    )  # fmt: skip
    job = Job.objects.create(owner=account.owner, account=account, name=name, script=script)
    tasks.submit_job.apply(args=[job.pk])
    job.refresh_from_db()
    deadline = timezone.now() + timedelta(seconds=60)
    while not job.is_final and timezone.now() < deadline:
        tasks.poll_clusters.apply()
        job.refresh_from_db()
        time.sleep(0.3)
    assert job.state == JobState.COMPLETED
    device = GpuDevice.objects.get(job=job)
    assert device.node == job.nodes and device.mean_utilization == 55.0
    assert SampleFile.objects.get(job=job).finished
    assert job.gpu_utilization == 55.0
