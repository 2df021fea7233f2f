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
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
import redis
from django.conf import settings
from django.core.management import call_command
from django.db import connection

from jobs import tasks
from jobs.models import ClusterAccount, Job, JobState
from portal.celery import app
from tests.devcluster import DevCluster
from tests.processes import portal_env, start_python
from tests.services import need_postgresql_for_workers, service_missing

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
    env = portal_env(
        tmp_path,
        DATABASE_URL=_database_url(),
        CELERY_BROKER_URL=REDIS_URL,
        CELERY_VISIBILITY_TIMEOUT=str(VISIBILITY_TIMEOUT),
        PORTAL_ENCRYPTION_KEY=settings.PORTAL_ENCRYPTION_KEY,  # to read the account's key
    )
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

        with _worker(env, tmp_path / "first.log", queue) as first:
            backend = _wait(_waiting_on_the_event, 20, "the worker to reach its first save")
            job.refresh_from_db()
            assert job.submit_started and not job.slurm_id
            assert len(_slurm_jobs(devcluster, job)) == 1  # sbatch ran

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
        with _worker(env, tmp_path / "second.log", queue):
            _wait(lambda: Job.objects.filter(pk=job.pk).exclude(slurm_id="").exists(), 20, "the id")

        job.refresh_from_db()
        made = _slurm_jobs(devcluster, job)
        assert len(made) == 1, f"Slurm jobs with this job's tag: {made}"
        [slurm_id] = made
        assert (job.state, job.slurm_id) == (JobState.PENDING, slurm_id)
        assert [e.detail for e in job.events.all()] == [f"Submitted as Slurm job {slurm_id}."]
        # The same task, redelivered by Redis rather than queued again by the test.
        assert f"submit_job[{task_id}] received" in (tmp_path / "second.log").read_text()
    except BaseException:
        for log in sorted(tmp_path.glob("*.log")):
            print(f"--- {log.name}:\n{log.read_text()}")
        raise
    finally:
        lock.close()
        ids = _slurm_jobs(devcluster, job)
        if ids:
            devcluster.ssh(f"scancel {' '.join(ids)}")
        for key in broker.scan_iter(f"*{queue}*"):
            broker.delete(key)
        for tag, payload in broker.hgetall("unacked").items():
            if queue.encode() in payload:
                broker.hdel("unacked", tag)
                broker.zrem("unacked_index", tag)


def _database_url() -> str:
    """The test database (not the one DATABASE_URL names), for the workers and the lock."""
    db = connection.settings_dict
    login = quote(db["USER"], safe="")
    if db["PASSWORD"]:
        login += f":{quote(db['PASSWORD'], safe='')}"
    where = f"{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/{quote(db['NAME'], safe='')}"
    return f"postgres://{login}@{where}" if login else f"postgres://{where}"


@contextmanager
def _worker(env: dict[str, str], log: Path, queue: str) -> Iterator[subprocess.Popen]:
    worker = start_python(
        env, log, "-m", "celery", "-A", "portal", "worker", "--pool=solo", "--queues", queue,
        "--loglevel=INFO", "--without-mingle", "--without-gossip", "--without-heartbeat",
    )  # fmt: skip
    try:
        yield worker
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()


def _waiting_on_the_event() -> int | None:
    """The server pid of a session blocked on inserting a job event: the worker, after sbatch."""
    # Asked on the test's own connection: the lock's, inside its transaction, would keep seeing
    # the activity as it was when the transaction first looked.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO \"jobs_jobevent\"%'"
        )
        row = cursor.fetchone()
    return row[0] if row else None


def _slurm_jobs(devcluster: DevCluster, job: Job) -> list[str]:
    """Ids of every Slurm job, in any state, that carries this portal job's tag."""
    result = devcluster.ssh("squeue --noheader --states=all --format='%i|%k'")
    assert result.returncode == 0, result.stderr
    rows = (line.split("|", 1) for line in result.stdout.splitlines())
    return [slurm_id for slurm_id, comment in rows if comment == f"portal:{job.tag}"]


def _wait[T](check: Callable[[], T], timeout: float, what: str) -> T:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
        time.sleep(0.1)
    return value
