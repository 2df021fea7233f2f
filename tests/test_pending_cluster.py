"""Why a job waits, on real Slurm: each pending state made real on the dev cluster (a full
partition, a QOS's GPU limit, a reservation, a hold, a dependency, a drained node), followed by
the portal's own poll and shown on the job's page in plain words.

Celery tasks run in-process (`.apply()`), as in tests/test_jobs_cluster.py. Every job a test
submits is cancelled when it ends, and a drained node is resumed.
"""

import time
import uuid

import pytest

from guidance.engine.pending_reasons import explain_pending
from jobs import tasks
from jobs.models import ClusterAccount, Job, JobState
from tests.devcluster import LATER_RESERVATION, ONE_GPU_QOS


@pytest.fixture
def submit(local_login: ClusterAccount, devcluster):
    """Submits a script through the portal's own task; every job it made is cancelled after."""
    made: list[Job] = []

    def submit_one(body: str, *directives: str) -> Job:
        name = f"t-{uuid.uuid4().hex[:8]}"
        lines = [
            "#!/bin/bash",
            f"#SBATCH --output=portal-jobs/{name}/slurm-%j.out",
            "#SBATCH --time=00:03:00",
            *(f"#SBATCH {directive}" for directive in directives),
            body,
        ]
        job = Job.objects.create(
            owner=local_login.owner,
            account=local_login,
            name=name,
            script="\n".join(lines) + "\n",
        )
        tasks.submit_job.apply(args=[job.pk])
        job.refresh_from_db()
        assert job.state == JobState.PENDING and job.slurm_id, job.message
        made.append(job)
        return job

    yield submit_one
    ids = " ".join(job.slurm_id for job in made)
    if ids:
        devcluster.ssh(f"scancel {ids}")


def _poll_until(jobs: list[Job], done, timeout: float = 45) -> None:
    """Polls as beat does until `done(job)` holds for every job; fails saying what each is."""
    deadline = time.monotonic() + timeout
    while True:
        tasks.poll_clusters.apply()
        for job in jobs:
            job.refresh_from_db()
        if all(done(job) for job in jobs):
            return
        states = [(job.slurm_id, job.state, job.reason, job.expected_start) for job in jobs]
        assert time.monotonic() < deadline, f"still {states}"
        time.sleep(1)


def _waiting_with(reason: str):
    return lambda job: job.state == JobState.PENDING and job.reason == reason


def _running(job: Job) -> bool:
    return job.state == JobState.RUNNING


def _page(client, job: Job) -> str:
    return client.get(f"/jobs/{job.pk}/").content.decode()


def _says_why(client, job: Job, code: str) -> str:
    """The job page and the jobs list say what Slurm's reason means and show its code small."""
    why = explain_pending(code)
    assert why.known
    page = _page(client, job)
    listing = client.get("/jobs/").content.decode()
    for text in (page, listing):
        assert why.meaning in text
        assert '<small class="reason-code"' in text and f">{code}</small>" in text
    return page


@pytest.fixture
def full_partition(submit):
    """gpu-rtx (one node, two GPUs) taken whole by a running job; two jobs wait behind it."""
    filler = submit("sleep 150", "--partition=gpu-rtx", "--gres=gpu:rtx:2")
    _poll_until([filler], _running)
    first = submit("sleep 5", "--partition=gpu-rtx", "--gres=gpu:rtx:1")
    second = submit("sleep 5", "--partition=gpu-rtx", "--gres=gpu:rtx:1")
    return first, second


def test_a_job_behind_others_says_why_it_waits_and_when_it_should_start(
    full_partition, user_client
):
    first, second = full_partition
    _poll_until(
        [first], lambda job: _waiting_with("Resources")(job) and job.expected_start, timeout=80
    )
    _poll_until([second], _waiting_with("Priority"))
    page = _says_why(user_client, first, "Resources")
    assert "Slurm expects to start it at" in page and "in about" in page
    page = _says_why(user_client, second, "Priority")
    assert "higher priority are ahead of it" in page


def test_a_job_behind_others_shows_its_place_in_the_partition(full_partition, user_client):
    first, second = full_partition
    _poll_until([first, second], lambda job: job.ahead_in_queue is not None, timeout=20)
    assert "No pending job in gpu-rtx comes before it" in _page(user_client, first)
    assert "1 pending job in gpu-rtx comes before it by priority" in _page(user_client, second)


def test_a_job_over_the_qos_gpu_limit_says_so(submit, user_client):
    gpu = ("--partition=gpu-a100", f"--qos={ONE_GPU_QOS}", "--gres=gpu:a100:1")
    running = submit("sleep 120", *gpu)
    _poll_until([running], _running)
    over = submit("sleep 5", *gpu)
    _poll_until([over], _waiting_with("QOSMaxGRESPerUser"))
    page = _says_why(user_client, over, "QOSMaxGRESPerUser")
    assert "as many GPUs as its QOS allows one user at a time" in page


def test_a_job_for_a_reservation_ahead_says_it_waits_for_it(submit, user_client):
    job = submit("sleep 5", "--partition=gpu-rtx", f"--reservation={LATER_RESERVATION}")
    _poll_until([job], _waiting_with("Reservation"))
    assert "waits for the reservation it asked for" in _says_why(user_client, job, "Reservation")


def test_a_held_job_says_how_to_release_it(submit, user_client):
    job = submit("sleep 5", "--hold")
    _poll_until([job], _waiting_with("JobHeldUser"))
    page = _says_why(user_client, job, "JobHeldUser")
    assert "<code>scontrol release &lt;id&gt;</code>" in page
    assert "Slurm has not estimated a start yet." in page


def test_a_job_on_a_dependency_says_it_waits_for_the_other_job(submit, user_client):
    before = submit("sleep 120")
    _poll_until([before], _running)
    after = submit("sleep 5", f"--dependency=afterok:{before.slurm_id}")
    _poll_until([after], _waiting_with("Dependency"))
    assert "the job it depends on" in _says_why(user_client, after, "Dependency")


def test_jobs_for_a_drained_node_say_so_and_name_it(submit, user_client, devcluster):
    with devcluster.drained("rtx-1"):
        anywhere = submit("sleep 5", "--partition=gpu-rtx")
        pinned = submit("sleep 5", "--partition=gpu-rtx", "--nodelist=rtx-1")
        everywhere = (
            "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority "
            "partitions"
        )
        named = "ReqNodeNotAvail, UnavailableNodes:rtx-1"
        _poll_until([anywhere], _waiting_with(everywhere))
        _poll_until([pinned], _waiting_with(named))
        page = _says_why(user_client, anywhere, everywhere)
        assert "The nodes it could run on are down, drained" in page
        page = _says_why(user_client, pinned, named)
        assert "rtx-1 is down, drained or not responding" in page
