# A real Celery worker is killed right after sbatch, before it can save the Slurm id; Redis gives
# the unacknowledged task (submit_job is acks_late) to a second worker, which must adopt the job
# the first one made rather than submit another.
#
# The kill is timed with a table lock, not with a hook in the code: the test locks jobs_jobevent
# before the task is queued. The worker reads the job and saves submit_started (neither touches
# that table), runs sbatch, and then blocks on its first write after it, the "Submitted as" event.
# That is where the test kills it. It needs PostgreSQL: the worker is another process, which
# must see the test's committed rows and wait on its lock.

import io
import os
import signal
import time
import uuid
from pathlib import Path

import psycopg
import pytest
import redis
from django.core.management import call_command
from django.db import connection

from jobs import tasks
from jobs.models import ClusterAccount, Job, JobState
from portal.celery import app
from tests.devcluster import DevCluster
from tests.services import need_postgresql_for_workers, service_missing
from tests.workers import blocked_on_lock, print_logs, slurm_jobs, wait, worker, worker_env

REDIS_URL = "redis://127.0.0.1:6379/13"
VISIBILITY_TIMEOUT = 1  # seconds: how long Redis waits before it gives a dead worker's task away

pytestmark = pytest.mark.django_db(transaction=True)  # the workers must see committed rows


@pytest.fixture(autouse=True)
def _services() -> None:
    # Before the other fixtures: no point in seeding a database that no worker can share.
    need_postgresql_for_workers()
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except redis.RedisError as exc:
        service_missing(f"Redis is not reachable at {REDIS_URL}: {exc}")


@pytest.fixture
def account(devcluster, seeded, user) -> ClusterAccount:
    call_command("register_devcluster", user.username, stdout=io.StringIO())
    return ClusterAccount.objects.get(owner=user, cluster__slug="local")


def test_killing_the_worker_right_after_sbatch_still_gives_one_slurm_job(
    account: ClusterAccount,
    devcluster: DevCluster,
    tmp_path: Path,
) -> None:
    queue = f"worker-kill-{uuid.uuid4().hex[:8]}"  # its own queue: no other run takes our task
    env = worker_env(tmp_path, REDIS_URL, CELERY_VISIBILITY_TIMEOUT=str(VISIBILITY_TIMEOUT))
    job = Job.objects.create(
        owner=account.owner,
        account=account,
        name=f"t-{uuid.uuid4().hex[:8]}",
        # Held: it waits in the queue and never runs, whatever happens to the test.
        script="#!/bin/bash\n#SBATCH --hold\n#SBATCH --time=00:01:00\ntrue\n",
    )
    broker = redis.Redis.from_url(REDIS_URL)
    lock = psycopg.connect(env["DATABASE_URL"])
    try:
        lock.execute("LOCK TABLE jobs_jobevent IN ACCESS EXCLUSIVE MODE")
        with app.connection_for_write(REDIS_URL) as conn:
            task_id = tasks.submit_job.apply_async(args=[job.pk], queue=queue, connection=conn).id

        with worker(env, tmp_path / "first.log", queue) as first:
            backend = wait(
                lambda: blocked_on_lock('INSERT INTO "jobs_jobevent"%'),
                20,
                "the worker to reach its first save",
            )
            job.refresh_from_db()
            assert job.submit_started and not job.slurm_id
            assert len(slurm_jobs(devcluster, job)) == 1  # sbatch ran

            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
            # Its database session would go on waiting for the lock, and notice the dead client
            # only after it: end it now, as the crash of a worker not blocked by a test would.
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [backend])
        lock.rollback()  # the lock goes; the first worker's save never happened

        # Redis hands the task on only once it has been unacknowledged for VISIBILITY_TIMEOUT;
        # a worker looks for such tasks when it starts (and every 100 s after).
        time.sleep(VISIBILITY_TIMEOUT + 0.5)
        with worker(env, tmp_path / "second.log", queue):
            wait(lambda: Job.objects.filter(pk=job.pk).exclude(slurm_id="").exists(), 20, "the id")

        job.refresh_from_db()
        made = slurm_jobs(devcluster, job)
        assert len(made) == 1, f"Slurm jobs with this job's tag: {made}"
        [slurm_id] = made
        assert (job.state, job.slurm_id) == (JobState.PENDING, slurm_id)
        assert [e.detail for e in job.events.all()] == [f"Submitted as Slurm job {slurm_id}."]
        # The same task, redelivered by Redis rather than queued again by the test.
        assert f"submit_job[{task_id}] received" in (tmp_path / "second.log").read_text()
    except BaseException:
        print_logs(tmp_path)
        raise
    finally:
        lock.close()
        ids = slurm_jobs(devcluster, job)
        if ids:
            devcluster.ssh(f"scancel {' '.join(ids)}")
        for key in broker.scan_iter(f"*{queue}*"):
            broker.delete(key)
        for tag, payload in broker.hgetall("unacked").items():
            if queue.encode() in payload:
                broker.hdel("unacked", tag)
                broker.zrem("unacked_index", tag)
