"""The efficiency report and the next run's settings: plain tables, no database."""

import pytest

from guidance.engine import sources
from guidance.engine.efficiency import (
    JobFacts,
    apply_suggestions,
    report,
    resource_suggestions,
    suggested_minutes,
)
from guidance.engine.gpu_use import GpuUse
from tests.engine_helpers import cluster


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
    assert apply_suggestions(fields, suggestions) == {
        "hours": "1.25",
        "gpu_count": "1",
        "job_name": "resnet",
    }


def test_a_job_that_used_little_of_its_memory_gets_less_next_time():
    facts = JobFacts(max_rss_mb=10_000, requested_memory_mb=124_500)
    [memory] = report(facts, [], cluster("narval")).suggestions
    assert (memory.field, memory.value) == ("memory", "13312M")  # 12,500 MB, in whole GB
    assert memory.change == "--mem=13312M instead of 124500M"
    assert "used at most 10000 MB of the 124500 MB" in memory.reason


@pytest.mark.parametrize(("used", "asked"), [(70_000, 124_500), (900, 1000), (None, 4000)])
def test_memory_mostly_used_or_unknown_is_left_alone(used, asked):
    facts = JobFacts(max_rss_mb=used, requested_memory_mb=asked)
    assert not report(facts, [], cluster("narval")).suggestions


@pytest.mark.parametrize(("asked", "value"), [(100, "1024M"), (4000, "6144M"), (16384, "24576M")])
def test_a_job_killed_for_its_memory_gets_half_as_much_again_in_whole_gb(asked, value):
    # sacct's MaxRSS of a killed job is below the limit it hit: the request is what counts.
    facts = JobFacts(max_rss_mb=asked * 0.9, requested_memory_mb=asked, out_of_memory=True)
    [memory] = report(facts, [], cluster("narval")).suggestions
    assert (memory.field, memory.value) == ("memory", value)
    assert f"killed for using more than the {asked} MB it asked for" in memory.reason
    assert resource_suggestions(facts) == [memory]
