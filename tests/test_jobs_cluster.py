"""Submitting and following jobs on the real local Slurm cluster, through the real sshd: each
through the ordinary login and through the automation node (the key forced through the portal's
wrapper, no SFTP), but the test that stops the ordinary login's sshd.

Celery tasks run in-process here (`.apply()`): the same code a worker runs, one call at a time.
"""

import io
import itertools
import logging
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone

from jobs import tasks
from jobs.cluster import keys, remote
from jobs.cluster.errors import ClusterError
from jobs.cluster.gateway import command_line, gateway
from jobs.cluster.login import CommandResult
from jobs.models import ClusterAccount, Job, JobState
from jobs.slurm.squeue import parse_squeue, squeue_argv
from tests.cluster_routes import ROUTES, over_sftp, take_route

LAB = Path(os.environ.get("DEVCLUSTER_DIR", "/var/tmp/portal-devcluster"))


@pytest.fixture
def login_account(devcluster, seeded, user) -> ClusterAccount:
    call_command("register_devcluster", user.username, stdout=io.StringIO())
    return ClusterAccount.objects.get(owner=user, cluster__slug="local")


@pytest.fixture(params=ROUTES)
def account(request, login_account) -> ClusterAccount:
    return take_route(login_account, request.param)


def _job(account: ClusterAccount, body: str, *directives: str) -> Job:
    name = f"t-{uuid.uuid4().hex[:8]}"
    header = [f"#SBATCH --output=portal-jobs/{name}/slurm-%j.out", "#SBATCH --time=00:02:00"]
    if any("--array" in d for d in directives):
        header[0] = f"#SBATCH --output=portal-jobs/{name}/slurm-%A_%a.out"
    lines = ["#!/bin/bash", *header, *(f"#SBATCH {d}" for d in directives), body]
    return Job.objects.create(
        owner=account.owner, account=account, name=name, script="\n".join(lines) + "\n"
    )


def _submit(job: Job) -> Job:
    tasks.submit_job.apply(args=[job.pk])
    job.refresh_from_db()
    return job


def _follow(job: Job, timeout: float = 60) -> list[str]:
    """Polls like beat does until the job is final; returns the states it went through."""
    seen = [job.state]
    deadline = time.monotonic() + timeout
    while not job.is_final and time.monotonic() < deadline:
        tasks.poll_clusters.apply()
        job.refresh_from_db()
        if job.state != seen[-1]:
            seen.append(job.state)
        time.sleep(0.5)
    assert job.is_final, f"still {job.state} after {timeout} s"
    return seen


def test_a_job_runs_to_completion_and_its_output_shows(account, user_client, caplog):
    caplog.set_level(logging.DEBUG)
    job = _submit(_job(account, "echo hello from $SLURM_JOB_ID; sleep 2"))
    assert job.state == JobState.PENDING and job.slurm_id
    seen = _follow(job)
    assert seen[-1] == JobState.COMPLETED and job.exit_code == 0
    assert JobState.RUNNING in seen or JobState.PENDING in seen
    assert job.nodes and job.started and job.ended

    page = user_client.get(f"/jobs/{job.pk}/output/?stream=out").content.decode()
    assert f"hello from {job.slurm_id}" in page
    private = keys.decrypt(account.private_key_encrypted).splitlines()[1]
    assert private not in caplog.text


def test_a_job_that_exits_3_is_failed_with_exit_code_3(account):
    job = _submit(_job(account, "exit 3"))
    _follow(job)
    assert (job.state, job.exit_code) == (JobState.FAILED, 3)


def test_a_cancelled_job_shows_cancelled(account, user_client):
    job = _submit(_job(account, "sleep 60"))
    deadline = time.monotonic() + 30
    while job.state != JobState.RUNNING and time.monotonic() < deadline:
        tasks.poll_clusters.apply()
        job.refresh_from_db()
    user_client.post(f"/jobs/{job.pk}/cancel/")
    _follow(job)
    assert job.state == JobState.CANCELLED


def test_a_job_cancelled_before_it_was_ever_eligible_shows_cancelled(account, user_client):
    # Held: never eligible, so outside any sacct time window; sacct is asked for it by id.
    job = _submit(_job(account, "true", "--hold"))
    tasks.poll_clusters.apply()
    job.refresh_from_db()
    assert (job.state, job.reason) == (JobState.PENDING, "JobHeldUser")
    user_client.post(f"/jobs/{job.pk}/cancel/")
    _follow(job, timeout=30)
    assert job.state == JobState.CANCELLED


def test_a_job_over_its_memory_shows_out_of_memory_with_what_to_do(account, user_client):
    body = "python3 -c 'import time; data = b\"x\" * (400 << 20); time.sleep(30)'"
    job = _submit(_job(account, body, "--mem=100M"))
    _follow(job, timeout=60)
    if "TaskPlugin=task/cgroup" not in (LAB / "etc" / "slurm.conf").read_text():
        # No memory cgroup v1 on this machine: Slurm's own polling kills the step instead.
        assert job.state == JobState.FAILED
        return
    assert job.state == JobState.OUT_OF_MEMORY
    page = user_client.get(f"/jobs/{job.pk}/").content.decode()
    assert JobState.OUT_OF_MEMORY.explanation in page


def test_a_job_in_a_hidden_partition_is_followed_with_its_reason(account, user_client):
    # The dev cluster hides its site partitions, as real sites hide some: squeue needs --all.
    job = _submit(_job(account, "true", "--partition=site-alliance", "--hold"))
    tasks.poll_clusters.apply()
    job.refresh_from_db()
    assert (job.state, job.reason) == (JobState.PENDING, "JobHeldUser")
    user_client.post(f"/jobs/{job.pk}/cancel/")
    _follow(job, timeout=30)
    assert job.state == JobState.CANCELLED


def test_a_three_part_chain_runs_one_part_after_another(account, user_client):
    job = _submit(_job(account, "echo part $SLURM_ARRAY_TASK_ID; sleep 1", "--array=1-3%1"))
    _follow(job, timeout=90)
    parts = list(job.tasks.order_by("task_id"))
    assert [p.task_id for p in parts] == ["1", "2", "3"]
    assert all(p.state == JobState.COMPLETED for p in parts)
    for earlier, later in itertools.pairwise(parts):
        assert later.started >= earlier.ended
    assert job.state == JobState.COMPLETED
    # The page shows the newest part's output (one file per task).
    assert "part 3" in user_client.get(f"/jobs/{job.pk}/output/?stream=out").content.decode()


@pytest.mark.parametrize(
    ("directive", "slurm_says", "plain"),
    [
        ("--partition=nosuch", "invalid partition", "no partition of that name"),
        ("--time=05:00:00", "time limit", "over the partition's limit"),
    ],
)
def test_a_rejected_submission_shows_slurms_message(account, directive, slurm_says, plain):
    job = _submit(_job(account, "true", directive))
    assert job.state == JobState.SUBMIT_FAILED
    assert slurm_says in job.message.casefold()
    assert plain in job.message
    assert job.script.endswith("true\n")  # what the user wrote is kept


def test_a_job_folder_that_cannot_be_made_is_said_and_the_connection_lives_on(account):
    job = _job(account, "true")
    gateway.write_file(over_sftp(account), job.job_dir, b"a file where the job's folder is\n")
    remote.test_connection(account)  # the account's own connection, pooled
    opened = gateway.connections_opened
    job = _submit(job)
    assert job.state == JobState.SUBMIT_FAILED
    assert job.message.startswith("The job's folder could not be made on the cluster: mkdir:")
    assert "File exists" in job.message
    assert _submit(_job(account, "true")).state == JobState.PENDING
    assert gateway.connections_opened == opened  # the pooled connection was not dropped


def test_without_sbatch_on_the_path_the_submission_says_so(tmp_path):
    # The remote command line as the gateway sends it, run by a shell whose PATH has no sbatch.
    (tmp_path / "portal-jobs" / "t").mkdir(parents=True)
    line = command_line(f"set -- portal-jobs/t portal:x; {remote.SUBMIT}", with_stdin=True)
    result = subprocess.run(
        ["/bin/sh", "-c", line],
        input="#!/bin/bash\ntrue\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": str(tmp_path)},
        check=False,
    )
    assert result.returncode == 1
    failure = remote.failed_submission(CommandResult(1, result.stdout, result.stderr))
    assert isinstance(failure, ClusterError) and not failure.retryable
    assert (
        failure.message == "No sbatch on the login node's PATH: is Slurm's client installed there?"
    )


def test_a_second_submission_finds_the_job_the_first_made(account):
    # As if the worker died right after sbatch: the job is on the cluster, the database
    # does not know. The task, run again, must adopt it rather than submit again.
    job = _job(account, "sleep 5")
    job.submit_started = timezone.now()  # the dead worker got this far, and ran sbatch:
    job.save()
    first = remote.submit(job, tasks.submitted_script(job), look_first=False)
    job = _submit(job)
    assert job.slurm_id == first
    login = remote.login_for(account)
    queue = parse_squeue(gateway.run(login, squeue_argv(login.username)).stdout)
    assert [row.comment for row in queue].count(remote.tag(job)) == 1
    remote.cancel(job)


def test_a_changed_host_key_is_refused(account):
    cluster = account.cluster
    cluster.host_key = keys.generate_keypair().public_line  # not the sshd's key
    cluster.save()
    job = _submit(_job(account, "true"))
    assert job.state == JobState.SUBMIT_FAILED
    assert "host key has changed" in job.message
    assert job.events.filter(detail__contains="Trying again").count() == 0  # not retried


def _sshd_pid() -> int:
    return int((LAB / "run" / "sshd.pid").read_text().split()[0])


def test_a_stopped_sshd_is_retried_then_fails_clearly_and_a_later_retry_works(
    login_account, devcluster
):
    account = login_account
    gateway.close_all()
    os.kill(_sshd_pid(), signal.SIGTERM)
    time.sleep(0.5)
    try:
        job = _submit(_job(account, "true"))
        assert job.state == JobState.SUBMIT_FAILED
        assert job.events.filter(detail__contains="Trying again").count() == len(tasks.RETRY_DELAYS)
        assert "could not reach the cluster at 127.0.0.1:2222" in job.message
    finally:
        subprocess.run(["docker/devcluster/devcluster", "up"], check=True, capture_output=True)
    job.retry_submission()
    job = _submit(job)
    assert job.state == JobState.PENDING and job.slurm_id, job.message
    _follow(job)
    assert job.state == JobState.COMPLETED


def test_a_job_over_its_time_shows_timeout(account):
    job = _submit(_job(account, "sleep 300", "--time=00:01:00"))
    # Slurm checks time limits every 30 s: TIMEOUT comes up to ~30 s after the minute.
    _follow(job, timeout=150)
    assert job.state == JobState.TIMEOUT


def test_slurm_says_where_and_when_a_script_would_start(account):
    would = remote.test_only(account, "#!/bin/bash\n#SBATCH --time=5\n#SBATCH -p gpu-rtx\ntrue\n")
    assert would.partition == "gpu-rtx"
    assert would.nodes == ["rtx-1"]
