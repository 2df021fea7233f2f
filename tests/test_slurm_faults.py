"""Slurm's own daemons stopped for real on the dev cluster while a job runs: the portal keeps what
the last good poll saw and says it is stale, invents no state, and brings the job up to date
(how it ended, from sacct) once the daemon is back."""

import os
import signal
import subprocess
import time
from pathlib import Path

from jobs import tasks
from jobs.cluster.tracking import ACCOUNTING_DOWN
from jobs.models import Job, JobState
from tests.test_jobs_cluster import LAB, _job, _submit


def _stop(daemon: str) -> None:
    pid = int((LAB / "run" / f"{daemon}.pid").read_text().split()[0])
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        if _zombie(pid):  # stopped too: this machine's PID 1 reaps them only every ~2 s
            return
        time.sleep(0.2)
    raise AssertionError(f"{daemon} did not stop")


def _zombie(pid: int) -> bool:
    try:
        return "State:\tZ" in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True


def _restart_slurmctld(devcluster) -> None:
    """As its site restarts it: with its saved state (`devcluster up` starts one afresh)."""
    env = {"SLURM_CONF": str(LAB / "etc" / "slurm.conf"), "PATH": "/usr/sbin:/usr/bin:/bin"}
    subprocess.run(["/usr/sbin/slurmctld"], env=env, check=True, capture_output=True)
    deadline = time.monotonic() + 30
    while devcluster.ssh("squeue --noheader").returncode != 0:
        assert time.monotonic() < deadline, "slurmctld did not come back"
        time.sleep(0.5)


def _poll_until(job: Job, done, timeout: float = 90) -> Job:
    deadline = time.monotonic() + timeout
    while True:
        tasks.poll_clusters.apply()
        job.refresh_from_db()
        if done(job) or time.monotonic() > deadline:
            return job
        time.sleep(1)


def _running(account, seconds: int, exit_code: int) -> Job:
    job = _submit(_job(account, f"sleep {seconds}; exit {exit_code}"))
    job = _poll_until(job, lambda j: j.state == JobState.RUNNING)
    assert job.state == JobState.RUNNING
    return job


def test_with_slurmctld_down_the_job_is_stale_then_right_when_it_is_back(
    local_login, user_client, devcluster
):
    job = _running(local_login, 12, 3)
    last_good = job.polled
    try:
        _stop("slurmctld")
        tasks.poll_clusters.apply()  # squeue fails: nothing it printed is taken as the queue
        job.refresh_from_db()
        assert (job.state, job.stale, job.polled) == (JobState.RUNNING, True, last_good)
        page = user_client.get(job.get_absolute_url()).content.decode()
        assert "The cluster could not be reached: this is the state of" in page
        time.sleep(14)  # it ends meanwhile
    finally:
        _restart_slurmctld(devcluster)
    job = _poll_until(job, lambda j: j.is_final)
    assert (job.state, job.exit_code, job.stale) == (JobState.FAILED, 3, False)
    assert job.ended is not None and job.elapsed


def test_with_slurmdbd_down_an_ended_job_waits_for_its_exit_code(local_login, user_client):
    job = _running(local_login, 4, 7)
    try:
        _stop("slurmdbd")
        time.sleep(8)  # it ends: squeue lists it as ended, sacct cannot say how
        tasks.poll_clusters.apply()
        job.refresh_from_db()
        assert (job.state, job.exit_code, job.ended) == (JobState.COMPLETING, None, None)
        assert job.reason == ACCOUNTING_DOWN and not job.stale
        page = user_client.get(job.get_absolute_url()).content.decode()
        assert ACCOUNTING_DOWN in page.replace("&#x27;", "'")
        assert "Cancel the job" not in page and "exit code" not in page
    finally:
        subprocess.run(["docker/devcluster/devcluster", "up"], check=True, capture_output=True)
    job = _poll_until(job, lambda j: j.is_final)
    assert (job.state, job.exit_code, job.reason) == (JobState.FAILED, 7, "")
    assert job.ended is not None and job.elapsed
