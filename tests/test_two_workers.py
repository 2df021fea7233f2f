# Two Celery workers and one beat on Redis, as a site scales the portal: a login is never polled
# by two workers at once, and a submission delivered twice makes one Slurm job.
#
# Beat polls every second, and the test also queues a burst of polls, so that both workers (two
# processes each) take polls of the same login at the same moment. Each poll logs when it ends
# and how long it took; the intervals, across both workers' logs, must not overlap.

import itertools
import re
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from jobs import tasks
from jobs.models import ClusterAccount, Job, JobState
from portal.celery import app
from tests.devcluster import DevCluster
from tests.processes import start_python
from tests.services import need_postgresql_for_workers
from tests.workers import (
    POLL_AND_DEFAULT,
    OwnRedis,
    held_job,
    own_redis_server,
    print_logs,
    slurm_jobs,
    state_of,
    stop,
    wait,
    worker,
    worker_env,
)

# A worker's log line for the end of a poll, from jobs.tasks.poll_clusters (at DEBUG level).
POLLED = re.compile(r"^\[(?P<at>[\d-]+ [\d:]+,\d{3}): DEBUG/[^\]]+\] Polled \S+ in (?P<ms>\d+) ms")


def _worker_options(name: str) -> tuple[str, ...]:
    # One task reserved per process, so that a burst is shared rather than taken by one worker.
    return ("-n", f"{name}@%h", "--concurrency=2", "--prefetch-multiplier=1", "--loglevel=DEBUG")


pytestmark = [pytest.mark.service, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def own_redis(tmp_path: Path):
    yield from own_redis_server(tmp_path, persistent=False)


def test_two_workers_never_poll_a_login_at_once_nor_submit_twice(
    local_login: ClusterAccount, devcluster: DevCluster, own_redis: OwnRedis, tmp_path: Path
) -> None:
    need_postgresql_for_workers()
    account = local_login
    env = worker_env(tmp_path, own_redis.url, POLL_SECONDS="1", POLL_MAX_SECONDS="1")
    waiting = [held_job(account) for _ in range(3)]
    for job in waiting:
        tasks.submit_job.apply(args=[job.pk])
    twice = held_job(account)
    everyone = [*waiting, twice]
    beat = None
    try:
        with (
            worker(env, tmp_path / "first.log", POLL_AND_DEFAULT, *_worker_options("first")),
            worker(env, tmp_path / "second.log", POLL_AND_DEFAULT, *_worker_options("second")),
        ):
            beat = start_python(
                env, tmp_path / "beat.log", "-m", "celery", "-A", "portal", "beat",
                "--loglevel=INFO", "--schedule", str(tmp_path / "beat-schedule"),
            )  # fmt: skip
            with app.connection_for_write(own_redis.url) as conn:
                for _ in range(2):  # the same submission, delivered twice
                    tasks.submit_job.apply_async([twice.pk], connection=conn)
                for _ in range(12):  # a burst of polls besides beat's
                    tasks.poll_clusters.apply_async(connection=conn)
            wait(lambda: Job.objects.filter(pk=twice.pk).exclude(slurm_id="").exists(), 30, "id")

            # Polling goes on: a job cancelled on the cluster shows as cancelled.
            first = waiting[0]
            first.refresh_from_db()
            devcluster.ssh(f"scancel {first.slurm_id}")
            wait(lambda: state_of(first) == JobState.CANCELLED, 30, "the poll to see the cancel")
            wait(lambda: len(_polls(tmp_path)) >= 8, 30, "beat's polls")
            # Both take part: the burst may all go to one, but beat's polls go on reaching both.
            wait(lambda: _polled_by_both(tmp_path), 30, "a poll in each worker")
            stop(beat)

        polls = _polls(tmp_path)
        polls.sort(key=lambda poll: poll[1])
        for (log_a, start_a, end_a), (log_b, start_b, _) in itertools.pairwise(polls):
            assert start_b >= end_a - timedelta(milliseconds=5), (
                f"a poll in {log_b} began at {start_b} while one in {log_a} ran ({start_a}-{end_a})"
            )
        twice.refresh_from_db()
        assert slurm_jobs(devcluster, twice) == [twice.slurm_id]
        assert twice.events.filter(detail__startswith="Submitted as").count() == 1
    except BaseException:
        print_logs(tmp_path)
        raise
    finally:
        if beat is not None:
            stop(beat)
        ids = [i for job in everyone for i in slurm_jobs(devcluster, job)]
        if ids:
            devcluster.ssh(f"scancel {' '.join(ids)}")


def _polled_by_both(folder: Path) -> bool:
    return all(
        "poll_logins[" in (folder / name).read_text() for name in ("first.log", "second.log")
    )


def _polls(folder: Path) -> list[tuple[str, datetime, datetime]]:
    """(log, began, ended) of every poll of a login, from both workers' logs."""
    polls = []
    for name in ("first.log", "second.log"):
        for line in (folder / name).read_text().splitlines():
            if match := POLLED.match(line):
                ended = datetime.strptime(match["at"], "%Y-%m-%d %H:%M:%S,%f")
                polls.append((name, ended - timedelta(milliseconds=int(match["ms"])), ended))
    return polls
