"""The efficiency report's database edge: each GPU's use from its samples, and the live warning."""

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.gpu.efficiency import gpu_uses, refresh_warning
from jobs.models import GpuDevice, GpuSample, Job, JobState
from tests.test_job_pages import _account


def resnet_job(user, *, composition: bool = False) -> Job:
    """A job on narval running for an hour with 2 GPUs and 12 CPUs; with `composition`, the
    composer's fields it came from (2 GPUs for 4 hours)."""
    from guidance.models import Cluster
    from jobs.models import Composition
    from tests.test_compose_page import GOOD

    composed = None
    if composition:
        fields = GOOD | {"gpu_count": "2", "multi_gpu": "on", "hours": "4"}
        composed = Composition.objects.create(
            owner=user, name="resnet", fields=fields, script="#!/bin/bash\n"
        )
    return Job.objects.create(
        owner=user,
        account=_account(user, Cluster.objects.get(slug="narval")),
        composition=composed,
        name="resnet",
        script="#!/bin/bash\n",
        slurm_id="77",
        state=JobState.RUNNING,
        started=timezone.now() - timedelta(hours=1),
        cpus=12,
        gpus=2,
    )


@pytest.fixture
def running_job(user, seeded):
    return resnet_job(user)


def add_samples(job, index: int, utilization: float | None, *, minutes=60, node="a100-2", **kw):
    device = GpuDevice.objects.create(
        job=job,
        node=node,
        uuid=f"GPU-{node}-{index}",
        index=index,
        **({"name": "NVIDIA A100-SXM4-80GB", "memory_total_mb": 81920} | kw),
    )
    GpuSample.objects.bulk_create(
        GpuSample(
            device=device,
            at=job.started + timedelta(minutes=m + 1),
            seconds=60,
            utilization=utilization,
            memory_used_mb=12288 if utilization else 400,
        )
        for m in range(minutes)
    )
    return device


def test_gpu_uses_measures_after_the_warm_up(running_job):
    device = add_samples(running_job, 0, 30.0)
    # The first five minutes were busier: they do not count after the warm-up.
    device.samples.filter(at__lte=running_job.started + timedelta(minutes=5)).update(
        utilization=100
    )
    since = running_job.started + timedelta(minutes=5)
    [after] = gpu_uses(running_job, 90, since)
    assert after.mean == pytest.approx(30.0)
    assert after.seconds == 55 * 60 and after.under_seconds == 55 * 60
    [whole] = gpu_uses(running_job, 90)
    assert whole.mean == pytest.approx((5 * 100 + 55 * 30) / 60)
    assert whole.peak_memory_mb == 12288


def test_refresh_warning_sets_and_clears_the_text(
    running_job, settings, django_assert_max_num_queries
):
    settings.GPU_WARMUP_SECONDS = 300
    add_samples(running_job, 0, 30.0)
    idle = add_samples(running_job, 1, 0.0)
    # The policy, the GPUs' means, the save; as the warning appears, its notification (the job's
    # choice, its owner's default, the row) in a savepoint with the save.
    with django_assert_max_num_queries(8):
        text = refresh_warning(running_job)
    assert text.startswith("GPU 1 on a100-2 has done nothing for 55 minutes")
    assert "Your 2 GPUs are 15% busy on average; the cluster asks for more than 90%." in text
    assert Job.objects.get(pk=running_job.pk).gpu_warning == text
    idle.samples.update(utilization=95)
    GpuSample.objects.filter(device__index=0).update(utilization=95)
    assert refresh_warning(running_job) == ""
    assert Job.objects.get(pk=running_job.pk).gpu_warning == ""


def test_refresh_warning_waits_for_the_warm_up(running_job, settings, django_assert_num_queries):
    settings.GPU_WARMUP_SECONDS = 2 * 3600
    add_samples(running_job, 0, 0.0)
    with django_assert_num_queries(0):
        assert refresh_warning(running_job) == ""


def test_a_mig_slice_never_warns(running_job, settings):
    settings.GPU_WARMUP_SECONDS = 300
    add_samples(running_job, 0, None, mig=True)
    assert refresh_warning(running_job) == ""
