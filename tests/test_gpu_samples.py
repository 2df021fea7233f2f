"""GPU samples: storing parsed lines, choosing the files to read, and reading them from the
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
from jobs import tasks
from jobs.cluster import keys, remote
from jobs.cluster.errors import ClusterError, ErrorKind
from jobs.cluster.gateway import gateway
from jobs.gpu import sample_files, sample_store
from jobs.gpu.sample_lines import parse
from jobs.gpu.sample_store import Read
from jobs.models import ClusterAccount, GpuDevice, GpuSample, Job, JobState, JobTask, SampleFile
from tests.cluster_routes import ROUTES, over_sftp, take_route
from tests.test_gpu_sample_lines import T0, gpu_line, lines, sample_line

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
    stored = sample_store.store([_read(job, data)])
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
    sample_store.store([_read(job, more)])
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
    sample_store.store([_read(job, data)])
    mig = GpuDevice.objects.get(uuid="MIG-a")
    assert mig.mig and mig.mean_utilization is None and mig.peak_memory_mb == 1000
    assert mig.samples.filter(utilization=None).count() == 2
    job.refresh_from_db()
    assert job.gpu_utilization == 70.0  # the GPU's alone, not (0 + 70) / 2


def test_only_unknown_utilization_leaves_the_job_unknown(job: Job) -> None:
    sample_store.store([_read(job, lines(gpu_line(mig=True), sample_line(10, None)))])
    job.refresh_from_db()
    assert job.gpu_utilization is None


def test_unavailable_is_noted_and_summary_finishes_the_file(job: Job) -> None:
    unavailable = {"type": "unavailable", "time": T0, "node": "n2", "reason": "nvidia-smi missing"}
    sample_store.store([_read(job, lines(unavailable), node="n2")])
    assert SampleFile.objects.get(node="n2").note == "nvidia-smi missing"

    summary = {
        "type": "summary", "time": T0 + 30, "uuid": "GPU-a", "samples": 2,
        "mean_utilization": 42.0, "peak_memory_used_mb": 3000.0, "stopped_by": "SIGTERM",
    }  # fmt: skip
    data = lines(gpu_line(), sample_line(10, 40.0), sample_line(20, 40.0), summary)
    sample_store.store([_read(job, data)])
    device = GpuDevice.objects.get(uuid="GPU-a")
    assert device.mean_utilization == 42.0 and device.peak_memory_mb == 3000.0
    assert SampleFile.objects.get(node="n1").finished
    job.refresh_from_db()
    assert job.gpu_utilization == 42.0


def test_samples_read_again_are_not_stored_twice(job: Job) -> None:
    data = lines(gpu_line(), sample_line(10, 40.0), sample_line(20, 40.0))
    sample_store.store([_read(job, data)])
    # The file was replaced with the same start (a requeue): read from 0 again.
    file = SampleFile.objects.get()
    again = Read(file, 0, parse(data + lines(sample_line(30, 10.0))), read_at=file.offset)
    assert sample_store.store([again]).samples == 1
    assert GpuSample.objects.count() == 3


def test_bytes_another_poll_stored_first_are_not_stored_again(job: Job) -> None:
    data = lines(gpu_line(), sample_line(10, 40.0))
    first, second = _read(job, data), _read(job, data)  # two overlapping polls read the same
    sample_store.store([first])
    assert sample_store.store([second]).samples == 0
    file = SampleFile.objects.get()
    stale = Read(file, 0, parse(data), read_at=0)  # a read from before the first poll saved
    assert sample_store.store([stale]).samples == 0
    assert GpuSample.objects.count() == 1


def test_a_gpu_keeps_at_most_the_bound_of_samples(job: Job, monkeypatch) -> None:
    monkeypatch.setattr(sample_store, "MAX_POINTS", 40)
    utilizations = [float(i % 7 * 10) for i in range(100)]
    for start in range(0, 100, 10):
        batch = [sample_line(10 * (i + 1), utilizations[i]) for i in range(start, start + 10)]
        sample_store.store([_read(job, lines(gpu_line(), *batch) if start == 0 else lines(*batch))])
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
    too_old = make(JobState.COMPLETED, sample_files.FINAL_READ_SECONDS + 60)
    SampleFile.objects.create(job=too_old, node="n1", path="a", finished=False)
    chain = make(JobState.RUNNING)
    for task_id, state, ended in (("1", JobState.COMPLETED, 10), ("2", JobState.RUNNING, None)):
        JobTask.objects.create(
            job=chain, task_id=task_id, slurm_id=f"{chain.slurm_id}_{task_id}", state=state,
            started=now, ended=now - timedelta(seconds=ended) if ended else None,
        )  # fmt: skip
    JobTask.objects.create(job=chain, task_id="0", slurm_id="x", state=JobState.COMPLETED,
                           started=now, ended=now - timedelta(hours=1))  # fmt: skip

    parts = sample_files.parts_to_read(account, [job, pending, just_ended, chain], now)
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

    def broken(account, jobs, **options):
        raise ClusterError(ErrorKind.DISCONNECTED, "The connection was lost.", retryable=True)

    monkeypatch.setattr(sample_files, "collect", broken)
    Job.objects.filter(pk=job.pk).update(submitted=timezone.now())
    tasks.poll_clusters.apply()
    job.refresh_from_db()
    assert not job.stale and job.polled is not None
    assert "GPU samples of alice@narval not read: The connection was lost." in caplog.text


# -- on the local cluster ---------------------------------------------------------------------


@pytest.fixture(params=ROUTES)
def account(request, devcluster, seeded, user) -> ClusterAccount:
    """The lab user's login, or the same through the automation node: no SFTP, files read with
    the wrapper's commands."""
    call_command("register_devcluster", user.username, stdout=io.StringIO())
    account = ClusterAccount.objects.get(owner=user, cluster__slug="local")
    return take_route(account, request.param)


def test_it_reads_a_growing_file_once(account) -> None:
    name = f"t-{uuid.uuid4().hex[:8]}"
    job = Job.objects.create(
        owner=account.owner, account=account, name=name, script="", slurm_id="990001",
        state=JobState.RUNNING, nodes="a100-1,a100-2",
    )  # fmt: skip
    # Written as the job would, over the ordinary login's SFTP; read as the account reads.
    login = over_sftp(account)
    gateway.mkdirs(login, job.job_dir)
    path = f"{job.job_dir}/gpu-990001.a100-1.jsonl"
    whole = lines(gpu_line(node="a100-1"), *(sample_line(10 * i, 10.0 * i) for i in range(1, 9)))
    cut = whole.rindex(b"\n", 0, len(whole) - 1) + 20  # inside the last line
    gateway.write_file(login, path, whole[:cut])

    first = sample_files.collect(account, [job])
    assert first.files == 2  # a100-2's file is not there: silently nothing
    file = SampleFile.objects.get(job=job)
    assert file.offset == whole.rindex(b"\n", 0, len(whole) - 1) + 1
    assert GpuSample.objects.count() == 7

    gateway.write_file(login, path, whole)
    assert sample_files.collect(account, [job]).stored.samples == 1
    assert sample_files.collect(account, [job]).bytes == 0  # nothing new: nothing read
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
