"""A sweep's next run is sized per run, as its duration is asked: six 10-minute runs are not one
hour-long run. The efficiency report, "Apply to a new composition", the API, the right-sizing
from earlier runs and the timeout message read an array's longest task and each task's limit,
never the tasks' sum; a chain's parts run until the checkpoint warning, so they size no time.
Built from composed sweep scripts, task rows and runs.tsv text as the poller and the reader
leave them: no Slurm (the matrix runs the scripts)."""

from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from guidance.engine.efficiency import TIMEOUT_FACTOR, EachRun, JobFacts, resource_suggestions
from guidance.engine.history import Limits, summarize
from jobs.compose.forms import ComposeForm
from jobs.compose.from_form import compose
from jobs.compose.past_runs import past_run
from jobs.gpu.efficiency import final_report
from jobs.models import Composition, Job, JobState, Notification, NotifyEvent
from jobs.notify.messages import describe
from jobs.runs.listing import each_run
from tests.test_api_jobs import _auth
from tests.test_sweep_runs import (
    SWEEP,
    _job,
    _line,
    _table,
    _task,
    account,  # noqa: F401  (the imported fixture)
    scripts,  # noqa: F401
)

TEN_MINUTES = 600


def _composition(user, hours: str, script: str) -> Composition:
    return Composition.objects.create(
        owner=user, name="sweep1", fields=SWEEP | {"hours": hours}, script=script
    )


def _finished_array(user, account, script: str, seconds: list[int], hours="1") -> Job:  # noqa: F811
    """An array sweep as the poller leaves it: its tasks, and the accounting of them all."""
    job = _job(
        user,
        account,
        script,
        state=JobState.COMPLETED,
        composition=_composition(user, hours, script),
        started=timezone.now() - timedelta(hours=2),
        ended=timezone.now() - timedelta(minutes=5),
        gpus=1,
        elapsed_seconds=sum(seconds),  # sacct's tasks, added up
        time_limit_seconds=len(seconds) * 3600,
        longest_task_seconds=max(seconds),
        task_time_limit_seconds=3600,
    )
    for number, took in enumerate(seconds, start=1):
        _task(job, number, JobState.COMPLETED, 0, seconds=took, node="ng101")
    return job


@pytest.fixture
def array_sweep(user, account, scripts) -> Job:  # noqa: F811
    return _finished_array(user, account, scripts["array"], [TEN_MINUTES] * 6)


def _hours(report) -> list:
    return [s for s in report.suggestions if s.field == "hours"]


def test_an_arrays_report_sizes_each_run_by_its_longest(array_sweep):
    (time,) = _hours(final_report(array_sweep, each_run(array_sweep)))
    # The sum (an hour of runs) would have asked 1:15:00 per run: longer than each was given.
    assert time.value == "0.25"
    assert time.change == "0:15:00 per run instead of 1:00:00"
    assert "longest of its 6 completed runs took 0:10:00" in time.reason


def test_the_page_the_api_and_the_next_run_say_the_same(user_client, client, secret, array_sweep):
    page = user_client.get(f"/jobs/{array_sweep.pk}/gpus/").content.decode()
    assert "0:15:00 per run instead of 1:00:00" in page
    # Its time row says what the sum is, and what one task took of its own limit.
    assert "its tasks added up; the longest task ran" in page
    assert '<span class="nowrap">0:10:00 of 1:00:00</span>' in page

    answer = client.get(f"/api/v1/jobs/{array_sweep.pk}", headers=_auth(secret)).json()
    changes = [s["change"] for s in answer["efficiency"]["suggestions"]]
    assert "0:15:00 per run instead of 1:00:00" in changes

    response = user_client.post(f"/jobs/{array_sweep.pk}/next-run/")
    newest = Composition.objects.exclude(pk=array_sweep.composition_id).latest("pk")
    assert response.status_code == 302
    assert newest.fields["hours"] == "0.25"


def test_a_timed_out_run_asks_half_as_much_again_per_run(user, account, scripts):  # noqa: F811
    job = _finished_array(user, account, scripts["array"], [TEN_MINUTES] * 5 + [3600])
    job.tasks.filter(task_id="6").update(state=JobState.TIMEOUT)
    (time,) = _hours(final_report(job, each_run(job)))
    assert time.change == "1:30:00 per run instead of 1:00:00"


def test_a_run_stopped_later_than_its_duration_asks_more_than_it_had(user, account, scripts):  # noqa: F811
    # Half an hour a run, with each task's limit set by hand to an hour: the run that ran out had
    # the hour, so half as much again is of the hour.
    job = _finished_array(user, account, scripts["array"], [TEN_MINUTES] * 5 + [3600], "0.5")
    job.tasks.filter(task_id="6").update(state=JobState.TIMEOUT)
    (time,) = _hours(final_report(job, each_run(job)))
    assert time.change == "1:30:00 per run instead of 0:30:00"
    assert time.reason.startswith("A run ran out of time after 1:00:00")


def test_a_grouped_sweep_that_ran_out_of_time_asks_more_per_run(user, account, scripts):  # noqa: F811
    # Six runs of six minutes each, one after another in one job: runs 1-3 took 10 minutes.
    job = _job(
        user,
        account,
        scripts["grouped"],
        state=JobState.TIMEOUT,
        composition=_composition(user, "0.1", scripts["grouped"]),
        gpus=1,
        elapsed_seconds=2700,
        time_limit_seconds=2700,
        longest_task_seconds=2700,
        task_time_limit_seconds=2700,
    )
    _table(job, [_line(n, "0.1", n, 0, TEN_MINUTES, "500") for n in (1, 2, 3)])
    (time,) = _hours(final_report(job, each_run(job)))
    # Half as much again as the longest run (15 min, a quarter hour), not as the whole job.
    assert time.value == "0.25"
    assert time.change == "0:15:00 per run instead of 0:06:00"
    assert time.reason.startswith("Its job ran out of time before its runs were done")


def test_a_sweep_of_chains_proposes_no_time(user, account, seeded):  # noqa: F811
    # 200 h a run with checkpoints: each run's task requeues itself for its next part.
    form = ComposeForm(SWEEP | {"hours": "200", "checkpointing": "on"})
    composed = compose(form)
    assert composed is not None and "#SBATCH --requeue" in composed.script, form.errors
    job = _finished_array(user, account, composed.script, [3 * 3600 - 300] * 6, hours="200")
    assert _hours(final_report(job, each_run(job))) == []
    # Nor do its parts, as earlier runs of it.
    assert not past_run(job).sizes_time


def _past(user, account, script: str, longest: int, tasks: int, limit=3600, **kw) -> Job:  # noqa: F811
    return _job(
        user,
        account,
        script,
        slurm_id=str(600 + Job.objects.count()),
        state=JobState.COMPLETED,
        started=timezone.now() - timedelta(days=1),
        elapsed_seconds=longest * tasks,
        time_limit_seconds=limit * tasks,
        longest_task_seconds=longest,
        task_time_limit_seconds=limit,
        max_rss_mb=2000,
        requested_memory_mb=8000,
        **kw,
    )


def test_earlier_sweeps_size_the_next_by_their_longest_task(user, account, scripts):  # noqa: F811
    runs = [past_run(_past(user, account, scripts["array"], s, tasks=6)) for s in (600, 900)]
    found = summarize(runs, Limits(max_minutes=7 * 24 * 60))
    (time,) = [s for s in found.proposal if s.field == "time_limit"]
    assert time.value == "0:30:00"  # 15 min and a quarter, to the quarter hour
    assert time.change == "--time=0:30:00 instead of 1:00:00"
    assert "at most 15 min of 1 h" in found.headline


def test_earlier_chains_propose_memory_but_no_time(user, account):  # noqa: F811
    chain = "#!/bin/bash\n#SBATCH --array=1-3%1\n#SBATCH --time=03:00:00\npython train.py\n"
    runs = [past_run(_past(user, account, chain, 3 * 3600 - 300, 3, 3 * 3600)) for _ in (1, 2)]
    found = summarize(runs, Limits(max_minutes=7 * 24 * 60))
    assert [s.field for s in found.proposal] == ["memory"]


def test_a_timeout_message_speaks_of_one_task(user, account, scripts):  # noqa: F811
    job = _finished_array(user, account, scripts["array"], [TEN_MINUTES] * 5 + [3600])
    job.state = JobState.TIMEOUT
    job.save()
    told = Notification.objects.create(
        owner=user, job=job, event=NotifyEvent.FAILED, state=JobState.TIMEOUT
    )
    body = describe(told).body
    assert "--time=1:30:00 instead of 1:00:00" in body
    assert "6:00:00" not in body  # the six tasks' limits added up


@given(
    longest=st.integers(0, 7 * 24 * 3600),
    given_seconds=st.integers(60, 7 * 24 * 3600),
    timed_out=st.booleans(),
    ended=st.integers(1, 1000),
)
def test_each_runs_time_is_never_below_what_a_run_took(longest, given_seconds, timed_out, ended):
    """Whatever the runs took: the time proposed per run covers the longest run with a margin,
    is shorter than what each was given unless a run ran out of it, and then is half as much
    again; no proposal is the runs' sum."""
    runs = EachRun(ended, longest, given_seconds, timed_out)
    (time,) = resource_suggestions(JobFacts(each_run=runs)) or [None]
    if time is None:
        assert not timed_out  # close enough to what each run was given
        return
    seconds = float(time.value) * 3600
    assert time.field == "hours" and time.change.endswith(
        " per run instead of " + _clock(given_seconds)
    )
    if timed_out:
        assert seconds >= max(given_seconds, longest) * TIMEOUT_FACTOR
    else:
        assert longest * 1.25 <= seconds < given_seconds


def _clock(seconds: int) -> str:
    from guidance.engine.slurm_time import format_time

    return format_time(seconds)


def test_runs_that_failed_size_nothing(user, account, scripts):  # noqa: F811
    # Four runs crashed within seconds, two completed in 10 minutes: the completed ones decide.
    job = _finished_array(user, account, scripts["array"], [5] * 4 + [TEN_MINUTES] * 2)
    job.tasks.filter(task_id__in=["1", "2", "3", "4"]).update(state=JobState.FAILED, exit_code=1)
    (time,) = _hours(final_report(job, each_run(job)))
    assert "longest of its 2 completed runs took 0:10:00" in time.reason

    job.tasks.update(state=JobState.FAILED, exit_code=1)
    assert _hours(final_report(job, each_run(job))) == []


def test_a_job_that_failed_early_asks_for_no_less_time(user, account):  # noqa: F811
    script = "#!/bin/bash\n#SBATCH --time=12:00:00\npython train.py\n"
    job = _job(
        user,
        account,
        script,
        state=JobState.FAILED,
        exit_code=1,
        started=timezone.now() - timedelta(minutes=10),
        elapsed_seconds=5,
        time_limit_seconds=12 * 3600,
    )
    # It crashed at once: 15 minutes would stop the run that works, after 15 minutes.
    assert _hours(final_report(job)) == []
    job.state = JobState.COMPLETED
    (time,) = _hours(final_report(job))
    assert time.change == "--time=0:15:00 instead of 12:00:00"


@given(
    elapsed=st.integers(0, 14 * 24 * 3600),
    limit=st.one_of(st.none(), st.integers(60, 14 * 24 * 3600)),
    ending=st.sampled_from(["completed", "timed out", "ended early"]),
)
def test_one_jobs_time_is_never_below_what_it_took(elapsed, limit, ending):
    """A job that ended early proposes no time; one that ran out asks half as much again; one
    that completed is asked a quarter more than it took, and only when that is well under what
    it had."""
    facts = JobFacts(
        elapsed_seconds=elapsed,
        time_limit_seconds=limit,
        timed_out=ending == "timed out",
        ended_early=ending == "ended early",
    )
    (time,) = resource_suggestions(facts) or [None]
    if time is None:
        return
    assert ending != "ended early" and limit
    seconds = float(time.value) * 3600
    if ending == "timed out" or elapsed >= limit:
        assert seconds >= max(limit, elapsed) * TIMEOUT_FACTOR
    else:
        assert elapsed * 1.25 <= seconds < limit


def test_earlier_sweeps_size_each_run(user_client, user, account, scripts):  # noqa: F811
    form = SWEEP | {"hours": "1"}
    composition = _composition(user, "1", scripts["array"])
    for longest in (600, 720):
        _past(user, account, scripts["array"], longest, tasks=6, composition=composition)
    page = user_client.get("/jobs/new/", form).content.decode()
    assert "Last 2 runs: at most 12 min of 1 h" in page
    assert "ask 15 min per run" in page
    applied = user_client.post("/jobs/new/", form | {"apply_history": "1"})
    assert applied.context["form"].data["hours"] == "0.25"
    assert "time_limit" not in applied.context["form"].data  # the plan makes each job's
    # Runs of a quarter hour are short: the sweep now runs them in turn, in one job.
    assert 'SWEEP_RUNS="1 2 3 4 5 6"' in applied.context["composed"].script


def test_earlier_grouped_sweeps_size_no_time(user_client, user, account, scripts):  # noqa: F811
    form = SWEEP | {"hours": "0.1"}
    composition = _composition(user, "0.1", scripts["grouped"])
    for took in (1800, 2000):  # six runs in turn in one job: not one run's time
        _past(user, account, scripts["grouped"], took, tasks=1, composition=composition)
    page = user_client.get("/jobs/new/", form).content.decode()
    assert "Last 2 runs" in page
    assert 'data-field="hours"' not in page and 'data-field="time_limit"' not in page
    assert 'data-field="memory"' in page  # what the runs used still sizes the rest


def test_an_array_that_is_no_sweep_is_sized_by_its_longest_task(user, account):  # noqa: F811
    # Read from Slurm's accounting: no script, six tasks of 10 minutes, an hour each.
    job = _job(
        user,
        account,
        "",
        state=JobState.COMPLETED,
        elapsed_seconds=6 * TEN_MINUTES,
        time_limit_seconds=6 * 3600,
        longest_task_seconds=TEN_MINUTES,
        task_time_limit_seconds=3600,
    )
    (time,) = _hours(final_report(job))
    assert time.change == "--time=0:15:00 instead of 1:00:00"
    job.state = JobState.TIMEOUT
    job.longest_task_seconds = 3600
    (time,) = _hours(final_report(job))
    assert time.change == "--time=1:30:00 instead of 1:00:00"


def test_a_chain_is_sized_on_its_parts_added_up(user, account):  # noqa: F811
    # Its duration is the whole chain's: three parts of 3 h, of which the work took 4 h 10.
    chain = "#!/bin/bash\n#SBATCH --array=1-3%1\n#SBATCH --time=03:00:00\npython train.py\n"
    job = _job(
        user,
        account,
        chain,
        state=JobState.COMPLETED,
        elapsed_seconds=3 * 3600 - 300 + 3600 + 600,
        time_limit_seconds=9 * 3600,
        longest_task_seconds=3 * 3600 - 300,
        task_time_limit_seconds=3 * 3600,
    )
    (time,) = _hours(final_report(job))
    assert time.change == "5:30:00 in all instead of 9:00:00"
    assert time.reason.startswith("Its parts ran 4:05:00 in all of the 9:00:00 they asked for")


def test_the_next_run_leaves_no_time_limit_set_by_hand(user_client, user, account, scripts):  # noqa: F811
    # Each task's hour was set by hand over half-hour runs that took 10 minutes.
    job = _finished_array(user, account, scripts["array"], [TEN_MINUTES] * 6, "0.5")
    Composition.objects.filter(pk=job.composition_id).update(
        fields=SWEEP | {"hours": "0.5", "time_limit": "1:00:00"}
    )
    response = user_client.post(f"/jobs/{job.pk}/next-run/", follow=True)
    newest = Composition.objects.exclude(pk=job.composition_id).latest("pk")
    assert (newest.fields["hours"], newest.fields["time_limit"]) == ("0.25", "")
    assert "no time limit set by hand (it was 1:00:00)" in response.content.decode()
