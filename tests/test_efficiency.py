"""The efficiency report and the next run's settings: pure tables, then the database edge."""

from datetime import timedelta

import pytest
from django.utils import timezone

from guidance.engine import sources
from guidance.engine.gpu_use import GpuUse
from jobs.gpu.efficiency import (
    JobFacts,
    apply,
    gpu_uses,
    refresh_warning,
    report,
    suggested_minutes,
)
from jobs.models import GpuDevice, GpuSample, Job, JobState
from tests.engine_helpers import cluster
from tests.test_job_pages import _account


def _gpu(index: int, mean: float | None, **kw) -> GpuUse:
    defaults = {"node": "a100-2", "seconds": 3600, "sampled_seconds": 3600}
    return GpuUse(index=index, mean=mean, **(defaults | kw))


def test_cpu_memory_and_time_efficiency_as_seff_computes_them():
    facts = JobFacts(
        cpus=2,
        elapsed_seconds=100,
        cpu_seconds=50,
        max_rss_mb=1000,
        requested_memory_mb=4000,
        time_limit_seconds=400,
    )
    r = report(facts, [], cluster("narval"))
    assert r.cpu_percent == pytest.approx(25.0)
    assert r.memory_percent == pytest.approx(25.0)
    assert r.time_percent == pytest.approx(25.0)
    assert (r.cpu_time, r.core_walltime, r.elapsed, r.time_limit) == (
        "0:00:50",
        "0:03:20",
        "0:01:40",
        "0:06:40",
    )
    assert r.gpu_mean is None and r.under_target_percent is None


def test_unknown_figures_stay_unknown():
    r = report(JobFacts(), [], cluster("narval"))
    assert (r.cpu_percent, r.memory_percent, r.time_percent) == (None, None, None)
    assert r.suggestions == ()


def test_the_gpu_figures():
    uses = [
        _gpu(0, 30.0, under_seconds=3000, peak_memory_mb=12288, memory_total_mb=81920),
        _gpu(1, 0.0, under_seconds=3600, peak_memory_mb=500, memory_total_mb=81920),
    ]
    r = report(JobFacts(gpus=2), uses, cluster("narval"))
    assert r.gpu_mean == pytest.approx(15.0)
    assert r.under_target_percent == pytest.approx(100 * 6600 / 7200)
    assert (r.peak_memory_gb, r.card_memory_gb) == (12.0, 80.0)


@pytest.mark.parametrize(
    ("elapsed", "minutes"),
    [
        (60, 15),  # at least a quarter of an hour
        (100, 15),
        (3600, 75),  # 1 h x 1.25
        (3700, 90),  # 77 min, up to the next quarter
        (5760, 120),  # 96 min x 1.25 = 120 exactly
        (6000, 150),  # 125 min: half hours from 2 h on
        (20000, 420),  # 417 min
        (36000, 780),  # 10 h -> 12.5 h -> whole hours from 12 h on: 13 h
    ],
)
def test_the_suggested_time_is_the_run_and_a_quarter_rounded_up(elapsed, minutes):
    assert suggested_minutes(elapsed) == minutes
    assert minutes * 60 >= elapsed


def test_a_short_run_gets_a_shorter_time():
    facts = JobFacts(elapsed_seconds=100 * 60, time_limit_seconds=12 * 3600)
    [time] = report(facts, [], cluster("narval")).suggestions
    assert (time.field, time.value) == ("hours", "2.5")
    assert time.change == "--time=2:30:00 instead of 12:00:00"
    assert time.reason.startswith("It ran 1:40:00 of the 12:00:00 it asked for")
    assert time.source == sources.CHECKPOINT_CHAIN


def test_a_run_near_its_limit_keeps_its_time():
    facts = JobFacts(elapsed_seconds=3000, time_limit_seconds=3600)
    assert report(facts, [], cluster("narval")).suggestions == ()


def test_a_timed_out_run_gets_more_time():
    facts = JobFacts(elapsed_seconds=3600, time_limit_seconds=3600, timed_out=True)
    [time] = report(facts, [], cluster("narval")).suggestions
    assert time.value == "1.5" and "ran out of time" in time.reason
    assert time.source == sources.LONG_RUNNING


def test_two_gpus_at_30_and_0_percent_become_one_gpu():
    facts = JobFacts(gpus=2, elapsed_seconds=3600, time_limit_seconds=3600 * 4)
    uses = [_gpu(0, 30.0), _gpu(1, 0.0)]
    time, gpus = report(facts, uses, cluster("narval")).suggestions
    assert (gpus.field, gpus.value, gpus.change) == ("gpu_count", "1", "1 GPU instead of 2")
    assert gpus.reason.startswith("Its 2 GPUs were 15% busy on average: 1 at 90%")
    assert (time.value, time.change) == ("1.25", "--time=1:15:00 instead of 4:00:00")


def test_an_under_used_a100_on_the_processing_cluster_moves_to_rtx():
    facts = JobFacts(gpus=1, gpu_type="a100")
    uses = [_gpu(0, 40.0, peak_memory_mb=12288)]
    [other] = report(facts, uses, cluster("processing")).suggestions
    assert (other.field, other.value) == ("gpu_type", "rtx")
    assert "keeps a100 for jobs near 100% busy; at 40% this job belongs on rtx" in other.reason
    assert other.source == sources.PROCESSING_TRAINING


def test_apply_puts_the_values_in_the_composer_fields():
    facts = JobFacts(gpus=2, elapsed_seconds=3600, time_limit_seconds=3600 * 4)
    suggestions = report(facts, [_gpu(0, 30.0), _gpu(1, 0.0)], cluster("narval")).suggestions
    fields = {"hours": "4", "gpu_count": "2", "job_name": "resnet"}
    assert apply(fields, suggestions) == {"hours": "1.25", "gpu_count": "1", "job_name": "resnet"}


# --- The database edge --------------------------------------------------------------------


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
    with django_assert_max_num_queries(3):  # the policy, the GPUs' means, the save
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
