# Two Celery workers and beat on Redis, polling every second plus a burst of polls, follow one
# real job that starts and fails: each event is recorded once and e-mailed once (the workers write
# their e-mails into files), whichever worker polls.

import re
import time
from pathlib import Path

import pytest

from jobs import tasks
from jobs.models import ClusterAccount, EmailStatus, Notification, NotificationDefaults
from portal.celery import app
from tests.devcluster import DevCluster
from tests.processes import start_python
from tests.services import need_postgresql_for_workers
from tests.test_jobs_cluster import _job
from tests.workers import (
    POLL_AND_DEFAULT,
    OwnRedis,
    own_redis_server,
    print_logs,
    stop,
    wait,
    worker,
    worker_env,
)

pytestmark = [pytest.mark.service, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def own_redis(tmp_path: Path):
    yield from own_redis_server(tmp_path, persistent=False)


def _subjects(folder: Path) -> list[str]:
    found = []
    for file in folder.glob("*.log"):
        found += re.findall(r"^Subject: \[GPU portal\] (.+)$", file.read_text(), re.M)
    return sorted(found)


def test_two_workers_tell_each_event_once(
    local_login: ClusterAccount, devcluster: DevCluster, own_redis: OwnRedis, tmp_path: Path
) -> None:
    need_postgresql_for_workers()
    owner = local_login.owner
    owner.email = "alice@example.org"
    owner.save()
    NotificationDefaults.objects.create(owner=owner, on_start=True)
    outbox = tmp_path / "mail"
    env = worker_env(
        tmp_path,
        own_redis.url,
        POLL_SECONDS="1",
        POLL_MAX_SECONDS="1",
        EMAIL_BACKEND="file",
        EMAIL_FILE_PATH=str(outbox),
    )
    # Long enough to be seen running: the workers take about 5 s to start, and a 4 s job on a
    # quiet cluster had ended before their first poll, so its start was never seen.
    job = _job(local_login, "sleep 20; exit 3")
    tasks.submit_job.apply(args=[job.pk])
    job.refresh_from_db()
    options = ("--concurrency=2", "--prefetch-multiplier=1")
    beat = None
    try:
        with (
            worker(env, tmp_path / "first.log", POLL_AND_DEFAULT, "-n", "first@%h", *options),
            worker(env, tmp_path / "second.log", POLL_AND_DEFAULT, "-n", "second@%h", *options),
        ):
            beat = start_python(
                env, tmp_path / "beat.log", "-m", "celery", "-A", "portal", "beat",
                "--schedule", str(tmp_path / "beat-schedule"),
            )  # fmt: skip
            with app.connection_for_write(own_redis.url) as conn:
                for _ in range(8):  # a burst of polls besides beat's
                    tasks.poll_clusters.apply_async(connection=conn)
            sent = Notification.objects.filter(job=job, email_status=EmailStatus.SENT)
            wait(lambda: sent.count() == 2, 60, "both e-mails")
            wait(lambda: len(_subjects(outbox)) >= 2, 10, "the e-mail files")
            with app.connection_for_write(own_redis.url) as conn:
                for _ in range(4):  # polls go on: nothing is told twice
                    tasks.poll_clusters.apply_async(connection=conn)
            wait(lambda: own_redis.queued() == 0, 20, "the polls taken")
            time.sleep(2)
            stop(beat)
        assert _subjects(outbox) == [f"{job.name} failed: FAILED", f"{job.name} started"]
        assert Notification.objects.filter(job=job).count() == 2
    except BaseException:
        print_logs(tmp_path)
        raise
    finally:
        if beat is not None:
            stop(beat)
