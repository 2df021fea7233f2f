# A real Celery worker on the filesystem broker (`make run`'s former default) is killed just as it
# takes a submission: that broker deletes a message when a worker takes it (the embedded one marks
# it delivered, to the same effect), so nothing would ever run the submission again, and the job
# would show "Submitting" for ever. The sweep (beat's
# sweep_submissions) finds it once its task has been silent for SUBMIT_LEASE_SECONDS and hands it
# to a worker again, which submits it once.
#
# The kill is timed with a table lock: the test locks jobs_job before the worker starts, so the
# worker takes the message and then blocks on its first read of the job. That is where the test
# kills it. It needs PostgreSQL: the worker is another process, which must wait on the lock.

import os
import signal
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from jobs.models import ClusterAccount, Job, JobState
from tests.devcluster import DevCluster
from tests.processes import python
from tests.services import need_postgresql_for_workers
from tests.workers import blocked_on_lock, print_logs, slurm_jobs, wait, worker, worker_env

LEASE_SECONDS = 2
pytestmark = pytest.mark.django_db(transaction=True)  # the workers must see committed rows


@pytest.fixture(autouse=True)
def _postgresql() -> None:
    need_postgresql_for_workers()


def _run_task(env: dict[str, str], call: str) -> None:
    """Queues a task as the portal does, through the worker's own broker folder."""
    code = f"import django; django.setup(); from jobs import tasks; {call}"
    result = python(env, code)
    assert result.returncode == 0, result.stderr


def test_a_submission_lost_with_its_worker_is_swept_and_submitted_once(
    local_login: ClusterAccount, devcluster: DevCluster, tmp_path: Path
) -> None:
    account = local_login
    queue = "celery"  # Celery's default: the broker folder (tmp_path/celery/broker) is the test's
    # The filesystem broker, its folder under tmp_path/celery/broker.
    env = worker_env(tmp_path, "filesystem://", SUBMIT_LEASE_SECONDS=str(LEASE_SECONDS))
    job = Job.objects.create(
        owner=account.owner,
        account=account,
        name=f"t-{uuid.uuid4().hex[:8]}",
        script="#!/bin/bash\n#SBATCH --hold\n#SBATCH --time=00:01:00\ntrue\n",
    )
    broker = tmp_path / "celery" / "broker"
    lock = psycopg.connect(env["DATABASE_URL"])
    try:
        lock.execute("LOCK TABLE jobs_job IN ACCESS EXCLUSIVE MODE")
        _run_task(env, f"tasks.submit_job.delay({job.pk})")
        assert len(list(broker.iterdir())) == 1
        with worker(env, tmp_path / "first.log", queue) as first:
            backend = wait(
                lambda: blocked_on_lock("SELECT %jobs_job%"), 20, "the worker to take the task"
            )
            assert not list(broker.iterdir()), "the broker still holds the message"
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [backend])
        lock.rollback()

        # A worker that starts again finds nothing to do: the job is lost, as the issue saw it.
        with worker(env, tmp_path / "second.log", queue):
            time.sleep(LEASE_SECONDS + 1)
            job.refresh_from_db()
            assert (job.state, job.slurm_id, slurm_jobs(devcluster, job)) == (
                JobState.SUBMITTING,
                "",
                [],
            )
            _run_task(env, "tasks.sweep_submissions()")  # what beat runs every minute
            wait(lambda: Job.objects.filter(pk=job.pk).exclude(slurm_id="").exists(), 20, "id")
            _run_task(env, "tasks.sweep_submissions()")  # a second sweep finds nothing lost

        job.refresh_from_db()
        made = slurm_jobs(devcluster, job)
        assert len(made) == 1, f"Slurm jobs with this job's tag: {made}"
        assert (job.state, job.slurm_id) == (JobState.PENDING, made[0])
        assert [e.detail for e in job.events.order_by("pk")] == [
            "Its submission was lost on the way: trying again.",
            f"Submitted as Slurm job {made[0]}.",
        ]
    except BaseException:
        print_logs(tmp_path)
        raise
    finally:
        lock.close()
        ids = slurm_jobs(devcluster, job)
        if ids:
            devcluster.ssh(f"scancel {' '.join(ids)}")
