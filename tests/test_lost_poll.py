# A worker killed in the middle of a poll, with a second worker beside it on Redis: the login is
# polled again within two poll periods, never by both workers at once, and a job that ended
# meanwhile is never shown as fresh and wrong for longer than three periods.
#
# The test stops the first poll where it stamps the job (a row lock), so that it knows which
# worker is polling: each worker names itself to PostgreSQL (application_name).

import os
import re
import signal
import time
from datetime import datetime, timedelta
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from jobs import tasks
from jobs.models import ClusterAccount, Job, JobState
from tests.devcluster import DevCluster
from tests.processes import start_python
from tests.services import need_postgresql_for_workers
from tests.workers import (
    POLL_AND_DEFAULT,
    OwnRedis,
    held_job,
    own_redis_server,
    print_logs,
    stop,
    wait,
    worker,
    worker_env,
)

PERIOD = 6  # POLL_SECONDS: its lease is then 3 s (jobs.poll_leases)
POLLED = re.compile(r"^\[(?P<at>[\d-]+ [\d:]+,\d{3}): DEBUG/[^\]]+\] Polled \S+ in \d+ ms")

pytestmark = [pytest.mark.service, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def own_redis(tmp_path: Path):
    yield from own_redis_server(tmp_path, persistent=False)


def test_a_poll_lost_with_its_worker_is_done_again_within_two_periods(
    local_login: ClusterAccount, devcluster: DevCluster, own_redis: OwnRedis, tmp_path: Path
) -> None:
    need_postgresql_for_workers()
    env = worker_env(
        tmp_path, own_redis.url, POLL_SECONDS=str(PERIOD), POLL_MAX_SECONDS=str(PERIOD)
    )
    job = held_job(local_login)
    tasks.submit_job.apply(args=[job.pk])
    job.refresh_from_db()
    assert job.slurm_id, job.message
    lock = psycopg.connect(env["DATABASE_URL"])
    beat = None
    try:
        named = {name: _named(env, name) for name in ("first", "second")}
        with (
            worker(
                named["first"], tmp_path / "first.log", POLL_AND_DEFAULT, *_options("first")
            ) as first,
            worker(
                named["second"], tmp_path / "second.log", POLL_AND_DEFAULT, *_options("second")
            ) as second,
        ):
            workers = {"first": first, "second": second}
            # The next poll stops where it stamps the job, held by whichever worker took it.
            lock.execute("SELECT id FROM jobs_job WHERE id = %s FOR UPDATE", [job.pk])
            beat = start_python(
                env, tmp_path / "beat.log", "-m", "celery", "-A", "portal", "beat",
                "--loglevel=INFO", "--schedule", str(tmp_path / "beat-schedule"),
            )  # fmt: skip
            backend, polling = wait(_blocked_poll, 4 * PERIOD, "a worker's poll to reach the job")
            blocked_at = time.monotonic()
            other = "second" if polling == "first" else "first"

            # Alive, however long its poll takes, the worker keeps its lease: the other worker
            # does not poll the login meanwhile (two whole periods and more than a lease).
            time.sleep(2 * PERIOD)
            assert not _polls_since(tmp_path / f"{other}.log", blocked_at), "polled twice at once"

            devcluster.ssh(f"scancel {job.slurm_id}")  # the job ends while nobody polls
            ended_at = time.monotonic()
            killed = workers[polling]
            os.killpg(killed.pid, signal.SIGKILL)
            killed.wait()
            killed_at = time.monotonic()
            with connection.cursor() as cursor:  # its session would wait for the lock forever
                cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [backend])
            lock.rollback()

            wrong = _fresh_and_wrong_until_cancelled(job, ended_at, timeout=4 * PERIOD)
            recovered = time.monotonic() - killed_at
            assert recovered <= 2 * PERIOD, f"polled again {recovered:.1f} s after the kill"
            assert wrong <= 3 * PERIOD, f"shown fresh and wrong for {wrong:.1f} s"
            print(f"login polled again {recovered:.1f} s after its worker was killed")
            stop(beat)
    except BaseException:
        print_logs(tmp_path)
        raise
    finally:
        lock.close()
        if beat is not None:
            stop(beat)
        devcluster.ssh(f"scancel {job.slurm_id}")


def _options(name: str) -> tuple[str, ...]:
    # A pool process of its own (prefork), so that the lease's renewer runs where tasks run.
    return ("-n", f"{name}@%h", "--concurrency=1", "--prefetch-multiplier=1", "--loglevel=DEBUG")


def _named(env: dict[str, str], name: str) -> dict[str, str]:
    return env | {"DATABASE_URL": f"{env['DATABASE_URL']}?application_name=worker-{name}"}


def _blocked_poll() -> tuple[int, str] | None:
    """The server pid and worker of a poll waiting for the test's lock on the job."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, application_name FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
            " AND query LIKE 'UPDATE \"jobs_job\"%%' AND application_name LIKE 'worker-%%'"
        )
        row = cursor.fetchone()
    return (row[0], row[1].removeprefix("worker-")) if row else None


def _polls_since(log: Path, since: float) -> list[datetime]:
    """The polls a worker's log records as ended after the monotonic time `since`."""
    started = datetime.now() - timedelta(seconds=time.monotonic() - since)
    ends = (
        datetime.strptime(match["at"], "%Y-%m-%d %H:%M:%S,%f")
        for line in log.read_text().splitlines()
        if (match := POLLED.match(line))
    )
    return [end for end in ends if end > started]


def _fresh_and_wrong_until_cancelled(job: Job, since: float, timeout: float) -> float:
    """Watches the job as its pages show it until it shows cancelled; the longest stretch in
    which it showed a state it no longer had without calling itself stale."""
    longest, began = 0.0, None
    deadline = time.monotonic() + timeout
    while True:
        shown = Job.objects.select_related("account").get(pk=job.pk)
        now = time.monotonic()
        if shown.state == JobState.CANCELLED:
            return max(longest, now - began if began is not None else 0.0)
        assert now < deadline, f"still {shown.state} {now - since:.1f} s after the cancel"
        if shown.looks_stale:
            if began is not None:
                longest, began = max(longest, now - began), None
        elif began is None:
            began = since if longest == 0.0 else now
        time.sleep(0.2)
