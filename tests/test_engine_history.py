"""Right-sizing from history: earlier runs in, their figures and the values to ask for out."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guidance.engine.efficiency import TIME_MARGIN, TIMEOUT_FACTOR
from guidance.engine.history import (
    MIN_RUNS,
    SHORT_SHARE,
    Limits,
    Outcome,
    PastRun,
    summarize,
    words,
)
from guidance.engine.slurm_time import parse_seconds

DAY = Limits(max_minutes=24 * 60, memory_mb=512_000, gpus=8, target_percent=90)


def run(n: int, outcome=Outcome.COMPLETED, **kw) -> PastRun:
    figures = dict(
        elapsed_seconds=2 * 3600,
        time_limit_seconds=24 * 3600,
        max_rss_mb=50_000,
        requested_memory_mb=500_000,
        cpu_seconds=2 * 3600 * 4,
        cpus=8,
        gpus=8,
        gpu_busy_percent=30,
        gpu_memory_peak_mb=20_000,
    )
    return PastRun(f"job {n}", outcome, **(figures | kw))


def proposed(history, field: str) -> str | None:
    return next((s.value for s in history.proposal if s.field == field), None)


def test_it_proposes_time_memory_and_gpus_from_the_longest_and_largest_runs():
    runs = [
        run(1, elapsed_seconds=2 * 3600 + 10 * 60, max_rss_mb=52_000, gpu_busy_percent=25),
        run(2, elapsed_seconds=2 * 3600 + 40 * 60, max_rss_mb=58 * 1024, gpu_busy_percent=31),
        run(3),
    ]
    history = summarize(runs, DAY)
    # 2 h 40 x 1.25 = 3 h 20, rounded up to the half hour: the efficiency report's margin.
    assert proposed(history, "time_limit") == "3:30:00"
    assert proposed(history, "memory") == f"{math.ceil(58 * 1.25) * 1024}M"
    # 8 GPUs at most 31 % busy do the work of 3 at 90 %.
    assert proposed(history, "gpu_count") == "3"
    assert history.headline == (
        "Last 3 runs: at most 2 h 40 of 24 h, 58 GB of 488 GB, GPUs 31% busy: "
        "ask 3 h 30, 73 GB, 3 GPUs"
    )
    assert ("Elapsed", "2 h to 2 h 40, of 24 h asked") in history.figures()
    assert ("GPUs busy", "25% to 31% on average") in history.figures()
    assert ("CPU efficiency", "38% to 50%") in history.figures()
    assert ("GPU memory peak", "20 GB") in history.figures()


def test_it_names_and_leaves_out_failed_cancelled_running_and_much_shorter_runs():
    runs = [
        run(1),
        run(2, Outcome.FAILED, elapsed_seconds=9 * 3600),
        run(3, Outcome.CANCELLED, elapsed_seconds=20 * 3600),
        run(4, Outcome.RUNNING, elapsed_seconds=30 * 3600),
        run(5, elapsed_seconds=60),
        run(6),
    ]
    history = summarize(runs, DAY)
    assert [r.label for r in history.kept] == ["job 1", "job 6"]
    why = {left.label: left.why for left in history.left_out}
    assert set(why) == {"job 2", "job 3", "job 4", "job 5"}
    assert "failed" in why["job 2"] and "cancelled" in why["job 3"]
    assert "not finished" in why["job 4"] and "stopped early" in why["job 5"]
    # Only the kept runs count: 2 h x 1.25, not the failed 9 h.
    assert proposed(history, "time_limit") == "2:30:00"


def test_a_run_that_timed_out_asks_for_half_as_much_again():
    timed_out = run(2, Outcome.TIMED_OUT, elapsed_seconds=4 * 3600, time_limit_seconds=4 * 3600)
    runs = [run(1), timed_out]
    history = summarize(runs, DAY)
    assert proposed(history, "time_limit") == "6:00:00"
    assert "ran out of time" in history.proposal[0].reason


def test_the_partition_limit_caps_the_proposal_and_says_so():
    runs = [run(1, elapsed_seconds=23 * 3600), run(2, elapsed_seconds=22 * 3600)]
    history = summarize(runs, DAY)
    assert proposed(history, "time_limit") == "1-00:00:00"
    assert "the most this partition allows" in history.proposal[0].reason


def test_one_run_proposes_nothing():
    history = summarize([run(1), run(2, Outcome.FAILED)], DAY)
    assert history.too_few and history.proposal == ()
    assert history.headline.startswith("Last 1 run: at most 2 h of 24 h")


def test_busy_gpus_keep_their_count():
    history = summarize([run(1, gpu_busy_percent=95), run(2, gpu_busy_percent=88)], DAY)
    assert proposed(history, "gpu_count") is None


@pytest.mark.parametrize(
    "seconds, said",
    [(45, "45 s"), (12 * 60, "12 min"), (2 * 3600 + 40 * 60, "2 h 40"), (3 * 86400, "3 days")],
)
def test_durations_read_as_people_say_them(seconds, said):
    assert words(seconds) == said


# --- Whatever the runs -------------------------------------------------------------------------

outcomes = st.sampled_from(list(Outcome))


@st.composite
def runs(draw) -> list[PastRun]:
    count = draw(st.integers(0, 12))
    out = []
    for n in range(count):
        limit = draw(st.integers(60, 7 * 86400))
        outcome = draw(outcomes)
        elapsed = draw(st.integers(1, limit))
        if outcome == Outcome.TIMED_OUT:
            elapsed = limit
        requested = draw(st.floats(100, 2_000_000))
        rss = draw(st.one_of(st.none(), st.floats(1, requested)))
        out.append(
            PastRun(
                f"job {n}",
                outcome,
                elapsed_seconds=draw(st.one_of(st.just(elapsed), st.none())),
                time_limit_seconds=limit,
                max_rss_mb=rss,
                requested_memory_mb=requested,
                cpus=draw(st.integers(1, 64)),
                cpu_seconds=draw(st.floats(0, 1e7)),
                gpus=draw(st.integers(0, 16)),
                gpu_busy_percent=draw(st.one_of(st.none(), st.floats(0, 100))),
                sizes_time=draw(st.booleans()),
            )
        )
    return out


limits = st.builds(
    Limits,
    max_minutes=st.integers(15, 14 * 24 * 60),
    per_run=st.booleans(),
    memory_mb=st.one_of(st.none(), st.integers(1024, 4_000_000)),
    gpus=st.one_of(st.none(), st.integers(1, 16)),
    target_percent=st.integers(50, 100),
)


@settings(max_examples=300, deadline=None)
@given(runs(), limits)
def test_the_proposal_covers_the_kept_runs_within_what_the_cluster_allows(past, limit):
    history = summarize(past, limit)
    kept = history.kept
    if len(kept) < MIN_RUNS:
        assert history.proposal == ()
        return
    # A sweep's time is each run's duration (hours), another job's its time limit.
    time = proposed(history, "hours" if limit.per_run else "time_limit")
    assert proposed(history, "time_limit" if limit.per_run else "hours") is None
    # A chain's part runs until the checkpoint warning: only the other runs size the time.
    sized = [r for r in kept if r.sizes_time]
    if len(sized) < MIN_RUNS:
        assert time is None
    else:
        _covers(time, sized, limit)
    if memory := proposed(history, "memory"):
        megabytes = int(memory.removesuffix("M"))
        if limit.memory_mb:
            assert megabytes <= limit.memory_mb
        for r in kept:
            if r.max_rss_mb and r.outcome != Outcome.OUT_OF_MEMORY:
                assert megabytes >= min(r.max_rss_mb * TIME_MARGIN, limit.memory_mb or math.inf)
    if gpus := proposed(history, "gpu_count"):
        assert 1 <= int(gpus) < history.gpus
        assert limit.gpus is None or int(gpus) <= limit.gpus


def _covers(time: str, sized: list[PastRun], limit: Limits) -> None:
    minutes = float(time) * 60 if limit.per_run else parse_seconds(time) / 60
    assert minutes <= limit.max_minutes
    for r in sized:
        margin = TIMEOUT_FACTOR if r.outcome == Outcome.TIMED_OUT else TIME_MARGIN
        # Covers the run with its margin, unless the partition cannot: then its whole limit.
        # (hours as the form takes them carry six digits: under a second off)
        assert minutes >= min(r.elapsed_seconds * margin / 60, limit.max_minutes) - 0.01


@settings(max_examples=300, deadline=None)
@given(runs(), limits)
def test_every_run_is_either_kept_or_named_with_why_it_was_left_out(past, limit):
    history = summarize(past, limit)
    left = {r.label for r in history.left_out}
    assert {r.label for r in history.kept} | left == {r.label for r in past}
    assert not left & {r.label for r in history.kept}
    for r in history.kept:
        assert r.outcome not in (Outcome.FAILED, Outcome.CANCELLED, Outcome.RUNNING)
    assert all(r.why for r in history.left_out)
    ended = [r.elapsed_seconds for r in past if r.elapsed_seconds is not None
             and r.outcome not in (Outcome.FAILED, Outcome.CANCELLED, Outcome.RUNNING)]  # fmt: skip
    if ended:
        median = sorted(ended)[len(ended) // 2] if len(ended) % 2 else None
        for r in history.kept:
            if median is not None and r.outcome == Outcome.COMPLETED:
                assert r.elapsed_seconds >= median * SHORT_SHARE
