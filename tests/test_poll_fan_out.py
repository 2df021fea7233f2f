# Beat's poll fans out: one task per due login on the poll queue, never a second one for a login
# whose poll is still queued, and submissions (the default queue) never wait behind polls. A login
# whose jobs stay as they are is polled less and less often, until its owner looks or submits.

import base64
import json
import re
import uuid
from pathlib import Path

import pytest
import redis
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from jobs import polling, tasks
from jobs.models import ClusterAccount, Job, JobState
from portal.celery import app
from tests.devcluster import DevCluster
from tests.services import need_postgresql_for_workers
from tests.workers import (
    OwnRedis,
    held_job,
    own_redis_server,
    print_logs,
    slurm_jobs,
    state_of,
    wait,
    worker,
    worker_env,
)

LOGINS = 4


@pytest.fixture
def own_redis(tmp_path: Path):
    yield from own_redis_server(tmp_path, persistent=False)


@pytest.fixture
def logins(devcluster, seeded, django_user_model) -> list[ClusterAccount]:
    """LOGINS portal users, each with a login of its own (its own key) on the dev cluster."""
    names = [f"fan{i}-{uuid.uuid4().hex[:6]}" for i in range(LOGINS)]
    for name in names:
        django_user_model.objects.create_user(name, password="fan-out-password")
    call_command("register_devcluster", *names, stdout=open("/dev/null", "w"))  # noqa: SIM115
    return list(ClusterAccount.objects.filter(owner__username__in=names).select_related("cluster"))


def _queued_tasks(url: str, queue: str) -> list[str]:
    """The task names of the messages waiting in `queue`, oldest first."""
    return [message["headers"]["task"] for message in _queued(url, queue)]


def _queued(url: str, queue: str) -> list[dict]:
    client = redis.Redis.from_url(url)
    return [json.loads(raw) for raw in reversed(client.lrange(queue, 0, -1))]


def _queued_logins(url: str) -> list[int]:
    """The logins of the polls waiting in the poll queue, each batch's in turn."""
    logins = []
    for message in _queued(url, "poll"):
        if message["headers"]["task"] == "jobs.tasks.poll_logins":
            body = json.loads(base64.b64decode(message["body"]))
            logins += body[0][0]  # (args, kwargs, embed): its one argument, the logins
    return logins


@pytest.mark.django_db(transaction=True)
def test_polls_go_to_their_own_queue_once_per_login_and_submissions_do_not_wait(
    logins: list[ClusterAccount], devcluster: DevCluster, own_redis: OwnRedis, tmp_path: Path
) -> None:
    need_postgresql_for_workers()
    jobs = _submitted_held_jobs(logins)
    env = worker_env(tmp_path, own_redis.url)
    try:
        # Only a worker of the default queue: beat's dispatches run there, the polls they send wait.
        with worker(env, tmp_path / "default.log", "celery", "--concurrency=1"):
            _beats(own_redis, tmp_path / "default.log", 5)
            # Five beats, one poll: the four logins share the dev cluster's one Unix user, so they
            # are one login group polled through its oldest login (jobs.cluster.login_group);
            # the four later beats found it held.
            assert _queued_logins(own_redis.url) == [min(a.pk for a in logins)]

            # A submission goes through while the polls wait: it is not queued behind them.
            late = held_job(logins[0])
            with app.connection_for_write(own_redis.url) as conn:
                tasks.submit_job.apply_async([late.pk], connection=conn)
            wait(lambda: Job.objects.filter(pk=late.pk).exclude(slurm_id="").exists(), 30, "sbatch")
            jobs.append(late)
            assert (
                Job.objects.filter(pk__in=[j.pk for j in jobs], polled__isnull=False).count() == 0
            )

        # A worker of the poll queue takes it: every login's jobs polled, each shown as waiting.
        with worker(env, tmp_path / "poll.log", "poll", "--concurrency=2"):
            wait(lambda: own_redis.queued() == 0, 60, "the polls taken")
            wait(lambda: _all_polled(jobs), 30, "every login's jobs polled")
        for job in jobs:
            job.refresh_from_db()
            assert job.state == JobState.PENDING
            assert job.reason == "JobHeldUser"
        held = ClusterAccount.objects.filter(
            pk__in=[a.pk for a in logins], polled_until__isnull=False
        )
        assert not held.exists(), "a poll that ended gave its login back"
    except BaseException:
        print_logs(tmp_path)
        raise
    finally:
        ids = [i for job in jobs for i in slurm_jobs(devcluster, job)]
        if ids:
            devcluster.ssh(f"scancel {' '.join(ids)}")


@pytest.mark.django_db(transaction=True)
def test_a_cluster_with_a_reader_is_one_task_whatever_its_logins(
    logins: list[ClusterAccount], devcluster: DevCluster, own_redis: OwnRedis, tmp_path: Path
) -> None:
    need_postgresql_for_workers()
    owner = logins[0].owner.username
    call_command("register_devcluster", owner, "--reader", stdout=open("/dev/null", "w"))  # noqa: SIM115
    jobs = _submitted_held_jobs(logins)
    env = worker_env(tmp_path, own_redis.url)
    try:
        with worker(env, tmp_path / "default.log", "celery", "--concurrency=1"):
            _beats(own_redis, tmp_path / "default.log", 1)
            queued = _queued_tasks(own_redis.url, "poll")
            assert queued.count("jobs.tasks.poll_cluster") == 1
            assert "jobs.tasks.poll_logins" not in queued
        # The reader's one task shows every login's job as held.
        with worker(env, tmp_path / "poll.log", "poll", "--concurrency=2"):
            wait(lambda: own_redis.queued() == 0, 60, "the poll taken")
            wait(lambda: _all_polled(jobs), 30, "every login's jobs polled")
        assert {Job.objects.get(pk=job.pk).reason for job in jobs} == {"JobHeldUser"}
    except BaseException:
        print_logs(tmp_path)
        raise
    finally:
        ids = [i for job in jobs for i in slurm_jobs(devcluster, job)]
        if ids:
            devcluster.ssh(f"scancel {' '.join(ids)}")


def _submitted_held_jobs(logins: list[ClusterAccount]) -> list[Job]:
    """A held job of each login's, submitted as the portal submits it."""
    jobs = [held_job(account) for account in logins]
    for job in jobs:
        tasks.submit_job.apply(args=[job.pk])
    return jobs


def _beats(server: OwnRedis, log: Path, times: int) -> None:
    """Sends beat's poll `times`, and waits until the default queue's worker has run each."""
    with app.connection_for_write(server.url) as conn:
        for _ in range(times):
            tasks.poll_clusters.apply_async(connection=conn)
    wait(lambda: _dispatched(log) == times, 30, f"{times} beats")


def _dispatched(log: Path) -> int:
    """How many of beat's dispatches the worker has finished: each has sent all its polls."""
    return len(re.findall(r"Task jobs\.tasks\.poll_clusters\[\S+\] succeeded", log.read_text()))


def _polled(job: Job) -> bool:
    return Job.objects.filter(pk=job.pk, polled__isnull=False).exists()


def _all_polled(jobs: list[Job]) -> bool:
    return all(_polled(job) for job in jobs)


def _due(account: ClusterAccount) -> bool:
    return polling.due_logins(timezone.now()).filter(pk=account.pk).exists()


def _poll(account: ClusterAccount) -> float | None:
    """Polls the login as a worker does; the seconds until its next poll (None: next beat)."""
    account.refresh_from_db()
    polling.poll_login(account, "test")
    account.refresh_from_db()
    if account.poll_after is None:
        return None
    return round((account.poll_after - timezone.now()).total_seconds())


@pytest.mark.django_db(transaction=True)
def test_a_login_whose_jobs_stay_waiting_is_polled_less_often_until_its_owner_looks(
    local_login: ClusterAccount, devcluster: DevCluster, user_client: Client, settings
) -> None:
    settings.POLL_SECONDS, settings.POLL_MAX_SECONDS = 10, 60
    account = local_login
    job = held_job(account)
    made = [job]
    try:
        tasks.submit_job.apply(args=[job.pk])
        job.refresh_from_db()
        assert _poll(account) is None  # it went from submitted to held: a change
        # Quiet polls (as each poll that changes nothing ends) wait longer and longer: beat
        # skips the login until its wait is over.
        _back_off(account, times=2)
        assert not _due(account), "beat skips it until its wait is over"
        assert polling.due_logins(timezone.now(), on_schedule=False).filter(pk=account.pk)

        # Its owner opens the job's page: polled at the next beat again.
        assert user_client.get(f"/jobs/{job.pk}/").status_code == 200
        assert _due(account)

        # A change on the cluster shows at the next poll, and resets the wait.
        _back_off(account, times=2)
        devcluster.ssh(f"scancel {job.slurm_id}")
        wait(lambda: _poll(account) is None and state_of(job) == JobState.CANCELLED, 60, "sacct")
        account.refresh_from_db()
        assert (account.quiet_polls, account.poll_after) == (0, None)

        # A submission wakes its login too.
        _back_off(account, times=3)
        made.append(held_job(account))
        tasks.submit_job.apply(args=[made[-1].pk])
        assert _due(account)
    finally:
        ids = [i for each in made for i in slurm_jobs(devcluster, each)]
        if ids:
            devcluster.ssh(f"scancel {' '.join(ids)}")


def _back_off(account: ClusterAccount, times: int) -> None:
    for _ in range(times):
        account.refresh_from_db()
        polling.back_off(account, changed=False, now=timezone.now())


@pytest.mark.django_db
def test_quiet_polls_wait_twice_as_long_each_time_up_to_the_longest(local_login, settings) -> None:
    settings.POLL_SECONDS, settings.POLL_MAX_SECONDS = 10, 60
    now = timezone.now()
    waits = []
    for _ in range(5):
        polling.back_off(local_login, changed=False, now=now)
        waits.append((local_login.poll_after - now).total_seconds())
    assert waits == [20, 40, 60, 60, 60]
    local_login.refresh_from_db()
    assert local_login.quiet_polls == 5
    polling.back_off(local_login, changed=True, now=now)
    local_login.refresh_from_db()
    assert (local_login.quiet_polls, local_login.poll_after) == (0, None)


@pytest.mark.django_db
def test_without_back_off_every_login_is_polled_at_every_beat(local_login, settings) -> None:
    settings.POLL_SECONDS, settings.POLL_MAX_SECONDS = 10, 10
    for _ in range(3):
        polling.back_off(local_login, changed=False, now=timezone.now())
    local_login.refresh_from_db()
    assert local_login.poll_after is None


@pytest.mark.django_db
def test_a_dispatch_holds_only_the_logins_no_other_poll_holds(
    local_login, django_user_model
) -> None:
    other = ClusterAccount.objects.create(
        owner=django_user_model.objects.create_user("other-login"),
        cluster=local_login.cluster,
        username="someone",
    )
    assert polling.hold(other.pk, "a poll still running")
    held = polling.hold_all([local_login.pk, other.pk], "this dispatch")
    assert held == {local_login.pk}
    # Beat no longer even asks for a login whose poll is queued or running.
    assert polling.hold_all([local_login.pk], "the next dispatch") == set()
    # Its task polls under the dispatch's hold and lets the login go as it schedules the next.
    local_login.refresh_from_db()
    polling.back_off(local_login, changed=True, now=timezone.now(), releasing="this dispatch")
    assert polling.hold_all([local_login.pk], "the next dispatch") == {local_login.pk}


@pytest.mark.django_db
def test_a_wake_during_a_poll_wins_over_that_polls_back_off(local_login, settings) -> None:
    settings.POLL_SECONDS, settings.POLL_MAX_SECONDS = 10, 60
    polling.back_off(local_login, changed=False, now=timezone.now())
    local_login.refresh_from_db()
    assert polling.hold(local_login.pk, "poll")
    as_the_poll_read_it = ClusterAccount.objects.get(pk=local_login.pk)
    polling.wake(pk=local_login.pk)  # its owner opens a job page while the poll runs
    polling.back_off(as_the_poll_read_it, changed=False, now=timezone.now(), releasing="poll")
    local_login.refresh_from_db()
    assert local_login.quiet_polls == 0 and local_login.poll_after <= timezone.now()
    assert local_login.polled_until is None  # released all the same


@pytest.mark.django_db(transaction=True)
def test_a_poll_queued_one_login_a_task_by_an_older_portal_still_runs(local_login) -> None:
    tasks.poll_login.apply(args=[local_login.pk])
    local_login.refresh_from_db()
    assert local_login.quiet_polls == 1  # polled, with nothing to change
    assert local_login.polled_until is None  # and let go
