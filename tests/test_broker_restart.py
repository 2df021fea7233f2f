# Redis, the broker a deployed portal uses, is restarted for real under a worker with beat, with
# submissions queued and one made while it is down. Every submission must reach Slurm once, and
# polling must go on once Redis is back. Two ways Redis comes back:
# - with its append-only file (what the README asks of a deployment): the queued tasks are still
#   there and run as they were queued;
# - without persistence (Redis's default in Debian is snapshots only, and a kill loses what came
#   after the last one): the queued tasks are gone, and beat's sweep finds their jobs.
#
# The test runs its own redis-server on a free port, so killing it disturbs nothing else.

import time
from pathlib import Path

import pytest

from jobs import tasks
from jobs.models import ClusterAccount, Job, JobState
from portal.celery import app
from tests.devcluster import DevCluster
from tests.processes import python
from tests.services import need_postgresql_for_workers
from tests.workers import (
    POLL_AND_DEFAULT,
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

SWEEP_SECONDS = 2

pytestmark = [pytest.mark.service, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def own_redis(tmp_path: Path, request: pytest.FixtureRequest):
    yield from own_redis_server(tmp_path, persistent=request.param)


@pytest.mark.parametrize(
    "own_redis", [True, False], ids=["append-only", "no-persistence"], indirect=True
)
def test_every_submission_reaches_slurm_once_across_a_redis_restart(
    local_login: ClusterAccount, devcluster: DevCluster, own_redis: OwnRedis, tmp_path: Path
) -> None:
    need_postgresql_for_workers()
    account = local_login
    env = worker_env(
        tmp_path,
        own_redis.url,
        # Long enough that a queued task that survived is not swept first; short enough that the
        # sweep finds the lost ones soon.
        SUBMIT_LEASE_SECONDS="60" if own_redis.persistence else "6",
        SUBMIT_SWEEP_SECONDS=str(SWEEP_SECONDS),
        POLL_SECONDS="1",
        POLL_MAX_SECONDS="1",
    )
    jobs = [held_job(account) for _ in range(2)]
    persistent = bool(own_redis.persistence)
    try:
        # Queued while no worker runs; then Redis crashes.
        with app.connection_for_write(own_redis.url) as conn:
            sent = [tasks.submit_job.apply_async([job.pk], connection=conn).id for job in jobs]
        assert own_redis.queued() == 2
        own_redis.kill()
        own_redis.start()
        assert own_redis.queued() == (2 if persistent else 0)

        with worker(env, tmp_path / "worker.log", POLL_AND_DEFAULT, "--beat", "--concurrency=2"):
            for job in jobs:
                wait(lambda job=job: _submitted(job), 30, f"job {job.pk} to be submitted")
            log = (tmp_path / "worker.log").read_text()
            for job, task_id in zip(jobs, sent, strict=True):
                # The queued task itself ran, or the sweep stood in for the lost one.
                assert (f"submit_job[{task_id}] received" in log) == persistent
                events = list(job.events.values_list("detail", flat=True))
                assert ("Its submission was lost on the way: trying again." in events) != persistent

            # Redis crashes under the running worker, and a submission comes in meanwhile.
            own_redis.kill()
            late = held_job(account)
            jobs.append(late)
            made = python(env, _SUBMIT_AS_THE_PAGE_DOES.format(pk=late.pk))
            assert made.returncode == 0, made.stderr
            late.refresh_from_db()
            assert late.state == JobState.SUBMITTING
            assert late.reason.startswith(
                "waiting for the portal's task queue, which did not answer"
            )
            time.sleep(2)
            own_redis.start()

            # The worker reconnects with a growing back-off (2, 4, 6 s...), longer under load.
            wait(lambda: _submitted(late), 90, "the late job to be submitted")
            # Polling goes on: a job cancelled on the cluster shows as cancelled.
            first = jobs[0]
            first.refresh_from_db()
            devcluster.ssh(f"scancel {first.slurm_id}")
            wait(lambda: state_of(first) == JobState.CANCELLED, 30, "the poll to see the cancel")

        for job in jobs:
            job.refresh_from_db()
            assert slurm_jobs(devcluster, job) == [job.slurm_id], (
                f"Slurm jobs of portal job {job.pk}"
            )
        assert not late.reason.startswith("waiting for the portal's task queue")
    except BaseException:
        print_logs(tmp_path)
        raise
    finally:
        ids = [i for job in jobs for i in slurm_jobs(devcluster, job)]
        if ids:
            devcluster.ssh(f"scancel {' '.join(ids)}")


# What the composer's Submit does once it has saved the job: queue it when the transaction commits.
_SUBMIT_AS_THE_PAGE_DOES = """
import django
django.setup()
from django.db import transaction
from jobs import tasks
from jobs.models import Job
with transaction.atomic():
    tasks.queue_submission(Job.objects.get(pk={pk}))
"""


def _submitted(job: Job) -> bool:
    return Job.objects.filter(pk=job.pk).exclude(slurm_id="").exists()
