"""Every state Slurm reports reaches the job's page with what it means, through the poller's own
path (tasks.poll_clusters, with the cluster's answer faked, then tracking.apply), and a job that
has ended is no longer polled. The Slurm output is tests/slurm_output/: captured where the dev
cluster can produce a state, hand-written (*_handwritten.txt) where it cannot."""

import logging
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from django.utils.html import escape

from guidance.models import Cluster
from jobs import tasks
from jobs.cluster import remote, tracking
from jobs.cluster.remote import Snapshot
from jobs.gpu import sample_files
from jobs.models import STATE_EXPLANATIONS, ClusterAccount, Job, JobState
from jobs.slurm.sacct import parse_sacct
from jobs.slurm.squeue import parse_squeue
from jobs.slurm.states import SlurmState

OUTPUT = Path(__file__).parent / "slurm_output"

# A final state: the sacct output that reports it, and the job's id there.
FINAL = {
    SlurmState.BOOT_FAIL: ("sacct_final_states_handwritten.txt", "101"),
    SlurmState.DEADLINE: ("sacct_final_states_handwritten.txt", "102"),
    SlurmState.NODE_FAIL: ("sacct_final_states_handwritten.txt", "103"),
    SlurmState.OUT_OF_MEMORY: ("sacct_final_states_handwritten.txt", "104"),
    SlurmState.PREEMPTED: ("sacct_final_states_handwritten.txt", "105"),
    SlurmState.REVOKED: ("sacct_final_states_handwritten.txt", "106"),
    SlurmState.CANCELLED: ("sacct.txt", "34"),  # "CANCELLED by 1001"
    SlurmState.COMPLETED: ("sacct.txt", "36"),
    SlurmState.FAILED: ("sacct.txt", "32"),
    SlurmState.TIMEOUT: ("sacct.txt", "33"),
}

# A state in which the job may still run: the squeue and sacct output ("" for none) that report
# it, and the job's id there. STOPPED and SPECIAL_EXIT come from squeue: sacct reads them as
# RUNNING and PENDING.
NOT_FINAL = {
    SlurmState.PENDING: ("squeue_paused_and_held.txt", "sacct_paused_and_held.txt", "6"),
    SlurmState.RUNNING: ("squeue_active.txt", "sacct_active.txt", "36"),
    SlurmState.SUSPENDED: ("squeue_paused_and_held.txt", "sacct_paused_and_held.txt", "2"),
    SlurmState.STOPPED: ("squeue_paused_and_held.txt", "sacct_paused_and_held.txt", "3"),
    SlurmState.SPECIAL_EXIT: ("squeue_paused_and_held.txt", "sacct_paused_and_held.txt", "5"),
    SlurmState.CONFIGURING: ("squeue_states_handwritten.txt", "", "201"),
    SlurmState.SIGNALING: ("squeue_states_handwritten.txt", "", "202"),
    SlurmState.RESIZING: ("squeue_states_handwritten.txt", "", "203"),
    SlurmState.STAGE_OUT: ("squeue_states_handwritten.txt", "", "204"),
    SlurmState.COMPLETING: ("squeue_states_handwritten.txt", "", "205"),
    SlurmState.REQUEUED: ("", "sacct_requeued.txt", "4"),
    SlurmState.REQUEUE_FED: ("squeue_states_handwritten.txt", "", "207"),
    SlurmState.REQUEUE_HOLD: ("squeue_states_handwritten.txt", "", "208"),
    SlurmState.RESV_DEL_HOLD: ("squeue_states_handwritten.txt", "", "209"),
}


def captured(name: str) -> str:
    return (OUTPUT / name).read_text() if name else ""


class FakeCluster:
    """Answers remote.poll with `snapshot` and keeps the ids each poll asked about."""

    def __init__(self) -> None:
        self.snapshot = Snapshot([], [])
        self.asked: list[list[str]] = []

    def poll(self, account: ClusterAccount, since, slurm_ids: list[str]) -> Snapshot:
        self.asked.append(sorted(slurm_ids))
        return self.snapshot


@pytest.fixture
def cluster(monkeypatch) -> FakeCluster:
    fake = FakeCluster()
    monkeypatch.setattr(remote, "poll", fake.poll)
    monkeypatch.setattr(sample_files, "collect", lambda account, jobs: None)
    return fake


@pytest.fixture
def account(seeded, user) -> ClusterAccount:
    return ClusterAccount.objects.create(
        owner=user,
        cluster=Cluster.objects.get(slug="narval"),
        username="portaltest",
        public_key="ssh-ed25519 AAAA",
        private_key_encrypted="not used here",
    )


def _job(account: ClusterAccount, slurm_id: str) -> Job:
    return Job.objects.create(
        owner=account.owner,
        account=account,
        name=f"job-{slurm_id}",
        script="#!/bin/bash\n",
        slurm_id=slurm_id,
        state=JobState.PENDING,
    )


def _status(client, job: Job) -> str:
    return client.get(f"/jobs/{job.pk}/").content.decode()


def test_every_slurm_state_has_a_case_here():
    assert set(FINAL) == {state for state in SlurmState if state.is_final}
    assert set(FINAL) | set(NOT_FINAL) == set(SlurmState) - {SlurmState.UNKNOWN}


def test_every_state_has_an_explanation():
    assert set(STATE_EXPLANATIONS) == set(JobState)
    assert {JobState(state) for state in SlurmState} <= set(JobState)


@pytest.mark.parametrize("state", FINAL, ids=str)
def test_a_job_that_ended_shows_how_and_is_no_longer_polled(state, account, cluster, user_client):
    sacct, slurm_id = FINAL[state]
    job = _job(account, slurm_id)
    cluster.snapshot = Snapshot([], parse_sacct(captured(sacct)))
    tasks.poll_clusters()
    job.refresh_from_db()
    assert job.state == state and job.is_final
    portal_state = JobState(state)
    page = _status(user_client, job)
    assert f"<strong>{portal_state.label}</strong>" in page
    assert escape(portal_state.explanation) in page
    assert 'hx-trigger="every 3s"' not in page and "Cancel the job" not in page
    assert (
        f'title="{escape(portal_state.explanation)}"' in user_client.get("/jobs/").content.decode()
    )

    tasks.poll_clusters()
    assert cluster.asked == [[slurm_id]]  # not asked again


@pytest.mark.parametrize("state", NOT_FINAL, ids=str)
def test_a_job_that_may_still_run_shows_its_state_and_is_polled_on(
    state, account, cluster, user_client
):
    squeue, sacct, slurm_id = NOT_FINAL[state]
    job = _job(account, slurm_id)
    cluster.snapshot = Snapshot(parse_squeue(captured(squeue)), parse_sacct(captured(sacct)))
    tasks.poll_clusters()
    tasks.poll_clusters()
    job.refresh_from_db()
    assert job.state == state and not job.is_final
    portal_state = JobState(state)
    page = _status(user_client, job)
    assert f"<strong>{portal_state.label}</strong>" in page
    assert escape(portal_state.explanation) in page
    assert 'hx-trigger="every 3s"' in page
    # A job that is ending can no longer be cancelled: nothing is left to stop.
    assert ("Cancel the job" in page) == (state != JobState.COMPLETING)
    assert cluster.asked == [[slurm_id], [slurm_id]]


def test_a_held_job_says_why(account, cluster, user_client):
    job = _job(account, "5")
    cluster.snapshot = Snapshot(
        parse_squeue(captured("squeue_paused_and_held.txt")),
        parse_sacct(captured("sacct_paused_and_held.txt")),
    )
    tasks.poll_clusters()
    job.refresh_from_db()
    assert (job.state, job.reason) == (JobState.SPECIAL_EXIT, "job requeued in held state")
    status = _status(user_client, job)
    assert "put back in the queue and is held there" in status
    assert ">job requeued in held state</small>" in status  # Slurm's words, for the admins


def test_a_job_squeue_saw_end_waits_for_sacct_however_it_ended(account, cluster):
    # squeue says DEADLINE before sacct has the job's end: Completing until sacct says so.
    job = _job(account, "36")
    text = captured("squeue_active.txt").replace("36|36|N/A|RUNNING|", "36|36|N/A|DEADLINE|")
    cluster.snapshot = Snapshot(parse_squeue(text), parse_sacct(captured("sacct_active.txt")))
    tasks.poll_clusters()
    job.refresh_from_db()
    assert job.state == JobState.COMPLETING


def test_a_state_the_portal_does_not_know_is_not_shown_as_running(
    account, cluster, user_client, caplog
):
    job = _job(account, "36")
    cluster.snapshot = Snapshot(
        parse_squeue(
            captured("squeue_active.txt").replace("36|36|N/A|RUNNING|", "36|36|N/A|WARPED|")
        ),
        parse_sacct(captured("sacct_active.txt").replace("36|36|RUNNING|", "36|36|WARPED|")),
    )
    with caplog.at_level(logging.WARNING, logger="jobs.cluster.tracking"):
        tasks.poll_clusters()
        tasks.poll_clusters()
    job.refresh_from_db()
    assert (job.state, job.reason) == (JobState.UNKNOWN, "WARPED")
    page = _status(user_client, job)
    assert "<strong>Unknown state</strong> (WARPED)" in page
    assert "<strong>Running</strong>" not in page
    assert escape(JobState.UNKNOWN.explanation) in page
    assert cluster.asked == [["36"], ["36"]]  # it may still run: polled on
    assert [r.message for r in caplog.records if "WARPED" in r.message] == [
        "Slurm reported job state 'WARPED', which the portal does not know: its jobs show as "
        "'Unknown state' and are polled on"
    ]  # once, not at every poll


def test_an_array_ends_only_when_all_its_tasks_have():
    order = tracking.ARRAY_PRECEDENCE
    assert set(order) == {JobState(state) for state in SlurmState}
    assert len(order) == len(set(order))
    last_active = max(order.index(state) for state in order if state in JobState.active())
    first_final = min(order.index(state) for state in order if state in JobState.final())
    assert last_active < first_final


def test_a_chain_with_a_suspended_part_is_suspended_then_shows_its_failure(account, cluster):
    chain = _job(account, "35")
    part_1 = ("35_1|41|COMPLETED|", "35_1|41|BOOT_FAIL|")
    part_2 = ("35_2|42|COMPLETED|", "35_2|42|SUSPENDED|")
    cluster.snapshot = Snapshot(
        [], parse_sacct(captured("sacct.txt").replace(*part_1).replace(*part_2))
    )
    tasks.poll_clusters()
    chain.refresh_from_db()
    assert chain.state == JobState.SUSPENDED
    assert {t.task_id: t.state for t in chain.tasks.all()} == {
        "1": JobState.BOOT_FAIL,
        "2": JobState.SUSPENDED,
        "3": JobState.COMPLETED,
    }

    cluster.snapshot = Snapshot([], parse_sacct(captured("sacct.txt").replace(*part_1)))
    tasks.poll_clusters()
    chain.refresh_from_db()
    assert chain.state == JobState.BOOT_FAIL and chain.is_final
    tasks.poll_clusters()
    assert cluster.asked == [["35"], ["35"]]


def test_a_job_that_has_not_ended_shows_no_exit_code_and_no_run_time(account, user_client):
    # What sacct reports for a job still waiting: exit code 0:0 and an elapsed time of 0:00:00.
    job = _job(account, "4242")
    Job.objects.filter(pk=job.pk).update(exit_code=0, elapsed="0:00:00")
    page = _status(user_client, job)
    assert "exit code" not in page and "ran 0:00:00" not in page
    listed = user_client.get("/jobs/").content.decode()
    assert "<td>0</td>" not in listed
    Job.objects.filter(pk=job.pk).update(state=JobState.COMPLETED, started=timezone.now())
    page = _status(user_client, job)
    assert "exit code 0" in page and "ran 0:00:00" in page


def test_a_submission_that_never_reached_slurm_does_not_blame_slurm(account, user_client):
    job = _job(account, "")
    job.submission_failed("The portal could not reach the cluster at 127.0.0.1:2222.")
    page = _status(user_client, job)
    assert "Slurm did not take the script" not in page
    assert "The script was not submitted, so nothing ran" in page


# As sacct answered just after slurmdbd came back (the fault, measured on the dev
# cluster): a job that exited 3 while it was down, listed as failed with exit code 0 and no end.
SACCT_BEFORE_ITS_RECORD = (
    "301|301|FAILED|0:0|00:00:43|2026-11-22T04:10:00|Unknown|a100-1|"
    "billing=1,cpu=1,mem=500M,node=1|None|00:00:00||500M|00:10:00|gpu-a100|wrap|/home/portaltest|\n"
)
SACCT_WITH_ITS_RECORD = (
    "301|301|FAILED|3:0|00:00:04|2026-11-22T04:10:00|2026-11-22T04:10:04|a100-1|"
    "billing=1,cpu=1,mem=500M,node=1|None|00:00:00||500M|00:10:00|gpu-a100|wrap|/home/portaltest|\n"
)


def test_a_final_state_without_its_end_waits_for_sacct_s_last_word(account, cluster, user_client):
    job = _job(account, "301")
    cluster.snapshot = Snapshot([], parse_sacct(SACCT_BEFORE_ITS_RECORD))
    tasks.poll_clusters()
    job.refresh_from_db()
    assert (job.state, job.exit_code, job.ended) == (JobState.COMPLETING, None, None)
    assert "exit code" not in _status(user_client, job)
    cluster.snapshot = Snapshot([], parse_sacct(SACCT_WITH_ITS_RECORD))
    tasks.poll_clusters()  # still active, so polled again
    job.refresh_from_db()
    assert (job.state, job.exit_code, job.elapsed) == (JobState.FAILED, 3, "0:00:04")
    assert job.ended is not None


def test_a_login_another_worker_is_polling_is_skipped_until_its_hold_ends(account, cluster):
    # A poll that outlasts beat's interval (the controller down: 18 s a poll), or two workers:
    # the second poll must not ask the cluster about the same login at the same time.
    _job(account, "36")
    held = timezone.now() + timedelta(seconds=60)
    ClusterAccount.objects.filter(pk=account.pk).update(polled_until=held)
    tasks.poll_clusters()
    assert cluster.asked == []
    # A worker that died while polling holds it no longer than its hold.
    ClusterAccount.objects.filter(pk=account.pk).update(polled_until=timezone.now())
    tasks.poll_clusters()
    assert cluster.asked == [["36"]]
    account.refresh_from_db()
    assert account.polled_until is None  # given back once the poll is done
