"""The energy of a job's GPUs, from the sampler's lines to the database: each sample's joules,
each GPU's and the job's total, unknown (never 0) where a GPU has no energy counter."""

import html
import re

import pytest

from guidance.models import Cluster
from jobs.cluster import keys
from jobs.gpu import sample_store
from jobs.models import ClusterAccount, GpuDevice, GpuSample, Job, JobState
from tests.test_gpu_sample_lines import T0, gpu_line, lines, sample_line
from tests.test_gpu_samples import _read


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


def _sample(t: float, joules: float | None, uuid: str = "GPU-a") -> dict:
    return sample_line(t, 50.0, uuid) | {"energy_j": joules}


def _summary(t: float, joules: float | None, uuid: str = "GPU-a") -> dict:
    return {
        "type": "summary", "time": T0 + t, "uuid": uuid, "samples": 2, "mean_utilization": 50.0,
        "peak_memory_used_mb": 1000.0, "stopped_by": "SIGINT", "energy_j": joules,
    }  # fmt: skip


def test_each_sample_keeps_its_energy_and_the_gpus_and_the_jobs_add_up(job: Job) -> None:
    data = lines(
        gpu_line("GPU-a", 0),
        gpu_line("GPU-b", 1),
        _sample(10, 2500.0, "GPU-a"),
        _sample(10, 600.0, "GPU-b"),
    )
    sample_store.store([_read(job, data)])
    # The next poll reads the next lines: the totals carry on from what is stored.
    sample_store.store(
        [_read(job, lines(_sample(20, 2400.0, "GPU-a"), _sample(20, 600.0, "GPU-b")))]
    )
    a, b = GpuDevice.objects.get(uuid="GPU-a"), GpuDevice.objects.get(uuid="GPU-b")
    assert [s.energy_j for s in a.samples.all()] == [2500.0, 2400.0]
    assert (a.energy_j, b.energy_j) == (4900.0, 1200.0)
    job.refresh_from_db()
    assert job.gpu_energy_j == 6100.0


def test_a_gpu_without_the_counter_leaves_the_job_unknown_not_zero(job: Job) -> None:
    data = lines(gpu_line("GPU-a", 0), _sample(10, None), _sample(20, None), _summary(30, None))
    sample_store.store([_read(job, data)])
    assert GpuDevice.objects.get().energy_j is None
    assert GpuSample.objects.filter(energy_j__isnull=False).count() == 0
    job.refresh_from_db()
    assert job.gpu_energy_j is None


def test_one_gpu_unknown_makes_the_jobs_energy_unknown(job: Job) -> None:
    data = lines(
        gpu_line("GPU-a", 0), gpu_line("MIG-b", 1, mig=True),
        _sample(10, 2500.0, "GPU-a"), _sample(10, None, "MIG-b"),
    )  # fmt: skip
    sample_store.store([_read(job, data)])
    job.refresh_from_db()
    assert GpuDevice.objects.get(uuid="GPU-a").energy_j == 2500.0
    assert job.gpu_energy_j is None  # not 2500 J passed off as the whole job's


def test_old_sample_files_still_store_with_unknown_energy(job: Job) -> None:
    data = lines(gpu_line(), sample_line(10, 40.0), sample_line(20, 60.0))  # no energy_j keys
    stored = sample_store.store([_read(job, data)])
    assert (stored.samples, stored.malformed) == (2, 0)
    job.refresh_from_db()
    assert job.gpu_utilization == pytest.approx(50.0) and job.gpu_energy_j is None


def test_a_run_shorter_than_an_interval_has_its_summarys_energy(job: Job) -> None:
    sample_store.store([_read(job, lines(gpu_line(), _summary(4, 610.0)))])
    job.refresh_from_db()
    assert job.gpu_energy_j == 610.0
    # With samples, they count: the summary does not add their joules again.
    sample_store.store([_read(job, lines(gpu_line("GPU-c", 2), _sample(10, 1500.0, "GPU-c"),
                                         _summary(12, 1800.0, "GPU-c")), node="n2")])  # fmt: skip
    assert GpuDevice.objects.get(uuid="GPU-c").energy_j == 1500.0


def test_thinning_keeps_the_energy(job: Job, monkeypatch) -> None:
    monkeypatch.setattr(sample_store, "MAX_POINTS", 20)
    for start in range(0, 60, 10):
        batch = [_sample(10 * (i + 1), 100.0 + i) for i in range(start, start + 10)]
        sample_store.store([_read(job, lines(gpu_line(), *batch) if start == 0 else lines(*batch))])
    exact = sum(100.0 + i for i in range(60))
    assert GpuSample.objects.count() <= 20
    assert sum(s.energy_j for s in GpuSample.objects.all()) == pytest.approx(exact)
    assert GpuDevice.objects.get().energy_j == pytest.approx(exact)


# -- what users see: the job page's GPU section, the efficiency report, the API ------------------


def _text(html_text: str) -> str:
    words = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", html_text)).split())
    return re.sub(r" ([.,;])", r"\1", words)


def _part(page: str, pattern: str) -> str:
    found = re.search(pattern, page, re.S)
    assert found, pattern
    return _text(found[0])


def _finished(job: Job, energy: bool = True) -> Job:
    """2 GPUs that ran 1 h of a 4 h limit, sampled (with NVML's counter when `energy`)."""
    # Half of each GPU's energy in each of two samples: 0.5 kWh and 0.2 kWh in all.
    a, b = (900_000.0, 360_000.0) if energy else (None, None)
    data = lines(
        gpu_line("GPU-a", 0), gpu_line("GPU-b", 1),
        _sample(1800, a, "GPU-a"), _sample(1800, b, "GPU-b"),
        _sample(3600, a, "GPU-a"), _sample(3600, b, "GPU-b"),
    )  # fmt: skip
    sample_store.store([_read(job, data)])
    Job.objects.filter(pk=job.pk).update(
        state=JobState.COMPLETED, gpus=2, elapsed_seconds=3600, time_limit_seconds=4 * 3600
    )
    job.refresh_from_db()
    return job


def test_the_job_page_shows_gpu_hours_used_of_requested_and_energy(user_client, job: Job) -> None:
    page = user_client.get(f"/jobs/{_finished(job).pk}/").content.decode()
    table = _part(page, r'<table class="gpu-table">.*?</table>')
    assert "Energy" in table
    assert "GPU 0 on n1 NVIDIA A100-SXM4-40GB 50% 1.0 GB of 40 GB 0.500 kWh" in table
    assert "GPU 1 on n1 NVIDIA A100-SXM4-40GB 50% 1.0 GB of 40 GB 0.200 kWh" in table
    totals = _part(page, r'<p class="gpu-totals">.*?</p>')
    assert totals == "2.00 GPU-hours used of 8.00 requested · its GPUs used 0.700 kWh."
    # The efficiency report says the same.
    assert _part(page, r'<tr class="gpu-hours">.*?</tr>') == (
        "GPU-hours 2.00 used of 8.00 requested (2 GPUs \u00d7 the time limit)"
    )
    assert _part(page, r'<tr class="gpu-energy">.*?</tr>') == (
        "Energy 0.700 kWh used by its GPUs, as their driver counts it (NVML)"
    )


def test_without_the_counter_the_page_says_unknown_not_zero(user_client, job: Job) -> None:
    page = user_client.get(f"/jobs/{_finished(job, energy=False).pk}/").content.decode()
    table = _part(page, r'<table class="gpu-table">.*?</table>')
    assert table.count("unknown") == 2 and "kWh" not in table
    assert _part(page, r'<p class="gpu-totals">.*?</p>') == (
        "2.00 GPU-hours used of 8.00 requested."
    )
    assert _part(page, r'<tr class="gpu-energy">.*?</tr>').startswith("Energy unknown")
    assert "0.000 kWh" not in page


def test_the_api_gives_gpu_hours_and_energy(client, secret, job: Job) -> None:
    url = f"/api/v1/jobs/{_finished(job).pk}"
    body = client.get(url, headers={"Authorization": f"Bearer {secret}"}).json()
    assert (body["gpu_hours_used"], body["gpu_hours_requested"]) == (2, 8)
    assert body["gpu_energy_kwh"] == pytest.approx(0.7)
    report = body["efficiency"]
    assert (report["gpu_hours"], report["gpu_hours_requested"]) == (2, 8)
    assert report["energy_kwh"] == pytest.approx(0.7)


def test_the_api_gives_null_energy_for_gpus_without_the_counter(client, secret, job) -> None:
    url = f"/api/v1/jobs/{_finished(job, energy=False).pk}"
    body = client.get(url, headers={"Authorization": f"Bearer {secret}"}).json()
    assert body["gpu_energy_kwh"] is None and body["efficiency"]["energy_kwh"] is None
    assert body["gpu_hours_used"] == 2


def test_the_api_schema_documents_gpu_hours_and_energy(client, db) -> None:
    schemas = client.get("/api/v1/openapi.json").json()["components"]["schemas"]
    detail = schemas["JobDetailOut"]["properties"]
    assert "NVML" in detail["gpu_energy_kwh"]["description"]
    assert "time limit" in detail["gpu_hours_requested"]["description"]
    assert "energy_kwh" in schemas["EfficiencyOut"]["properties"]
    assert "GpuHoursOut" in schemas and "gpu_hours" in schemas["RecommendationOut"]["properties"]
