"""Celery tasks: thin, safe to run twice. They take primary keys, load, call the cluster through
jobs.cluster.remote, and save. They sit above jobs.cluster and jobs.gpu, which they orchestrate:
a submission gets its GPU monitoring here, a poll reads the jobs' states and then their GPU
samples."""

import contextlib
import logging
import math
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnreachable

from guidance.engine.slurm_refusals import explain_refusal
from jobs.cluster import cluster_load, history, remote, tracking
from jobs.cluster.errors import ClusterError
from jobs.gpu import sample_files
from jobs.gpu.monitoring import with_monitoring
from jobs.models import ClusterAccount, Job, JobOrigin, JobState
from jobs.notify import mail, record
from jobs.script_markers import STOP_STATUS

logger = logging.getLogger(__name__)
# The database is unreachable or restarting, as opposed to refusing data (DataError and the like).
DATABASE_GONE = (OperationalError, InterfaceError)

# How long one poll may hold its login: longer than a poll takes with the controller down (18 s
# measured: squeue waits for it) plus the GPU samples' reads.
POLL_HOLD_SECONDS = 120
# Seconds before each retry of a submission the cluster could not take, and of a poll the
# database cut short: 2, 4, 8, 16.
RETRY_DELAYS = (2, 4, 8, 16)
REPLACED = "Cancelled: replaced by Slurm job"
# What a submission reads: a few columns, not every row's whole text (bench/submit.py).
SUBMIT_FIELDS = (
    "name", "tag", "script", "state", "slurm_id", "message", "submit_started", "submit_task",
    "account__username", "account__private_key_encrypted",
    "account__cluster__login_host", "account__cluster__login_port",
    "account__cluster__host_key", "replaces",
)  # fmt: skip


def queue_submission(job: Job) -> None:
    """Hands the job to a worker once the transaction that saved it commits."""
    transaction.on_commit(lambda: _send_submission(job.pk))


def _send_submission(job_id: int) -> None:
    # A broker that is down (Redis restarting) must not lose the click nor answer with an error:
    # the job is saved in "Submitting", and the sweep sends it once the broker is back.
    try:
        submit_job.delay(job_id)
    except BrokerUnreachable as error:
        logger.warning("The task queue did not take job %s's submission: %s", job_id, error)
        within = math.ceil(settings.SUBMIT_SWEEP_SECONDS / 60)
        waiting = (
            f"waiting for the portal's task queue, which did not answer: sent within {within} min"
        )
        # Silent for longer than a lease already: the next sweep sends it.
        lost = timezone.now() - timedelta(seconds=settings.SUBMIT_LEASE_SECONDS + 1)
        unsent = Job.objects.filter(pk=job_id, state=JobState.SUBMITTING, slurm_id="")
        unsent.update(reason=waiting, submit_started=lost)


# Task names travel in broker messages and beat's schedule: written out, so that moving this
# module later cannot strand the tasks an older portal queued.
@shared_task(name="jobs.tasks.submit_job", bind=True, max_retries=len(RETRY_DELAYS), acks_late=True)
def submit_job(self, job_id: int) -> None:
    job = Job.objects.select_related("account__cluster").only(*SUBMIT_FIELDS).get(pk=job_id)
    if job.state != JobState.SUBMITTING or job.slurm_id:
        # Already done: a second delivery changes nothing, but finishes a replacement that the
        # first one may not have (a worker killed between the submission and the cancel).
        _retire_replaced(job)
        return
    look_first = job.submit_started is not None
    if not _claim(job, self.request.id):
        return  # another task holds it (the sweep's, or one queued twice): one sbatch at a time
    try:
        slurm_id = remote.submit(job, submitted_script(job), look_first)
    except remote.SlurmRefused as refused:
        job.submission_failed(explain_refusal(refused.message))
    except ClusterError as error:
        if error.retryable and self.request.retries < self.max_retries:
            delay = RETRY_DELAYS[self.request.retries]
            job.events.create(state=job.state, detail=f"{error.message} Trying again.")
            # Shown beside "Submitting": the portal waits for the cluster, not for Slurm.
            waiting = f"waiting for the cluster, which did not answer: trying again in {delay} s"
            Job.objects.filter(pk=job.pk).update(reason=waiting)
            raise self.retry(countdown=delay) from None
        job.submission_failed(error.message)
    else:
        job.submitted_as(slurm_id)
        _retire_replaced(job)
    if job.state == JobState.SUBMIT_FAILED:
        record.submission_failed(job)  # e-mailed by the next poll_clusters


def _retire_replaced(job: Job) -> None:
    """The waiting job this one replaces is cancelled only now that Slurm has accepted this one:
    the user never has neither, and never both for longer than one scancel."""
    if not job.replaces_id or not job.slurm_id:
        return
    old = Job.objects.select_related("account__cluster").get(pk=job.replaces_id)
    if old.is_final or not old.slurm_id or old.events.filter(detail__startswith=REPLACED).exists():
        return
    try:
        remote.cancel(old)
    except (remote.SlurmRefused, ClusterError) as error:
        detail = f"Not cancelled for job {job.slurm_id}: {error.message}"
        old.events.create(state=old.state, detail=detail)
        return
    old.events.create(state=old.state, detail=f"{REPLACED} {job.slurm_id}, which starts sooner.")


def _claim(job: Job, task_id: str) -> bool:
    """Takes the job for this task: its own retries and redeliveries keep it; another task gets it
    when no task holds it (a new job, or one that failed), or once the holder has been silent for
    SUBMIT_LEASE_SECONDS."""
    now = timezone.now()
    silent = now - timedelta(seconds=settings.SUBMIT_LEASE_SECONDS)
    free = Q(submit_task__in=["", task_id]) | Q(submit_started__lt=silent)
    taken = Job.objects.filter(free, pk=job.pk, state=JobState.SUBMITTING, slurm_id="").update(
        submit_task=task_id, submit_started=now
    )
    return taken == 1


@shared_task(name="jobs.tasks.sweep_submissions")
def sweep_submissions() -> None:
    """Jobs left in "Submitting" by a lost task (a worker killed as it took it, a broker that
    dropped it) go to a worker again, under a new task that holds them at once. It adopts the
    Slurm job an earlier attempt made, found by its tag, or submits once."""
    silent = timezone.now() - timedelta(seconds=settings.SUBMIT_LEASE_SECONDS)
    lost = Job.objects.filter(state=JobState.SUBMITTING, slurm_id="").filter(
        Q(submit_started__lt=silent) | Q(submit_started__isnull=True, created__lt=silent)
    )
    for job in lost.only("pk", "state", "submit_started"):
        task_id = str(uuid.uuid4())
        taken = Job.objects.filter(pk=job.pk, submit_started=job.submit_started).update(
            submit_task=task_id, submit_started=timezone.now()
        )
        if taken:  # not taken meanwhile by a task that came back to life
            job.events.create(
                state=job.state, detail="Its submission was lost on the way: trying again."
            )
            transaction.on_commit(
                lambda pk=job.pk, t=task_id: submit_job.apply_async([pk], task_id=t)
            )


def submitted_script(job: Job) -> str:
    """The job's script as Slurm gets it: with the GPU sampler between its monitoring markers
    when it asks for GPUs (jobs.gpu.monitoring); the job keeps the text its owner composed."""
    return with_monitoring(job.script, job.job_dir, settings.SAMPLE_SECONDS)


@shared_task(name="jobs.tasks.poll_clusters", bind=True, max_retries=len(RETRY_DELAYS))
def poll_clusters(self) -> None:
    """One squeue and one sacct per login with active jobs, whatever the number of jobs; then
    the new lines of their GPU sample files, over SFTP. Every login also gets its jobs read from
    accounting when that is due (one sacct more); then one sinfo and one squeue of the whole
    queue per cluster."""
    holder = self.request.id or str(uuid.uuid4())  # called directly, it is a task of its own
    try:
        with ThreadPoolExecutor(max_workers=2) as background:
            started = _start_cluster_reads(holder, background)
            _poll_logins(holder)
            _finish_cluster_reads(started)
        # Once the states, the scripts' reason lines and GPU warnings are saved; also those a
        # failing mail server left for later.
        mail.send_due()
    except DATABASE_GONE as error:
        # The database went away (a restart): what a poll read was saved in one transaction or
        # not at all. The same task runs again, polls what is due and takes its holds back;
        # logins it polled already are polled again, which changes nothing twice.
        if self.request.called_directly or self.request.retries >= self.max_retries:
            raise  # beat's next polls take over, once the holds expire
        logger.warning("Polling stopped on the database, trying again: %s", error)
        raise self.retry(countdown=RETRY_DELAYS[self.request.retries]) from None


def _poll_logins(holder: str) -> None:
    for account in _logins_to_poll(timezone.now()):
        if not _hold_for_polling(account, holder):
            continue  # another worker polls it right now
        began = time.monotonic()
        try:
            _poll(account)
            # Inside the hold: how long polls take, and (tests/test_two_workers.py) that two
            # workers never poll one login at once.
            logger.debug("Polled %s in %.0f ms", account, (time.monotonic() - began) * 1000)
        finally:
            with contextlib.suppress(DatabaseError):  # the database is gone: the hold expires
                ClusterAccount.objects.filter(pk=account.pk).update(polled_until=None)


def _start_cluster_reads(holder: str, background: ThreadPoolExecutor) -> list[tuple]:
    """Each cluster's GPUs and pending queue, once per cycle (the free-GPU view and each waiting
    job's place): its two commands run while the logins are polled, on a thread of their own."""
    started = []
    for cluster in cluster_load.clusters_to_read():
        taken = cluster_load.take(cluster, holder)
        if taken is not None:
            load, account = taken
            started.append((cluster, load, background.submit(remote.read_load, account)))
    return started


def _finish_cluster_reads(started: list[tuple]) -> None:
    """Saves them once the logins' states are in; a cluster that fails costs the others nothing."""
    for cluster, load, reading in started:
        try:
            cluster_load.finish(load, cluster, reading.result)
        except DATABASE_GONE:
            raise
        except Exception:
            logger.exception("The GPUs of %s were not read", cluster)


def _hold_for_polling(account: ClusterAccount, task_id: str) -> bool:
    """Takes the login for this poll, for POLL_HOLD_SECONDS at most: a worker that dies while
    polling holds it no longer than that. The task that holds it may take it again."""
    now = timezone.now()
    free = Q(polled_until__isnull=True) | Q(polled_until__lt=now) | Q(polled_by=task_id)
    until = now + timedelta(seconds=POLL_HOLD_SECONDS)
    held = ClusterAccount.objects.filter(free, pk=account.pk)
    return held.update(polled_until=until, polled_by=task_id) == 1


def _poll(account: ClusterAccount) -> None:
    now = timezone.now()
    history_since = history.window(account, now)
    # The history's sacct and squeue run while the login's own squeue and sacct do, on the same
    # connection: the poll waits for the longer of the two, not for both (bench/poll.py).
    with ThreadPoolExecutor(max_workers=1) as background:
        reading = (
            background.submit(remote.history_since, account, history_since)
            if history_since is not None
            else None
        )
        jobs = _poll_states(account)
        if reading is not None and (found := _save_history(account, reading, history_since, now)):
            # Accounting lists an array's tasks only once they start: the queue has the rest.
            _poll_states(account, found)
    if jobs is None:
        return  # the login did not answer: its jobs are stale
    _say_why_scripts_stopped(account)
    # GPU samples are read with the states they belong to; failing to read them marks no job
    # stale (the states are fresh) and costs nothing but a retry next poll.
    try:
        sample_files.collect(account, [job for job in jobs if not job.is_outside])
    except ClusterError as error:
        logger.warning("GPU samples of %s not read: %s", account, error.message)
    except DATABASE_GONE:
        raise  # the whole poll is tried again (poll_clusters)
    except Exception:
        # One login's bad data must not stop the others' polls.
        logger.exception("GPU samples of %s not stored", account)


def _poll_states(account: ClusterAccount, jobs: list[Job] | None = None) -> list[Job] | None:
    """squeue and sacct for the login's active jobs (or `jobs`); None when the login did not
    answer."""
    if jobs is None:
        jobs = list(account.jobs.filter(state__in=JobState.active()))
    if jobs:
        try:
            since = min(job.submitted or job.created for job in jobs)
            snapshot = remote.poll(account, since, [job.slurm_id for job in jobs])
        except ClusterError:
            Job.objects.filter(pk__in=[job.pk for job in jobs]).update(stale=True)
            return None
        tracking.apply(snapshot, jobs)
    return jobs


def _unexplained_stops(since) -> dict:
    """Jobs whose script stopped itself lately and whose reason is not read yet."""
    return {
        "state": JobState.FAILED,
        "exit_code": STOP_STATUS,
        "message": "",
        "ended__gte": since,
        "origin": JobOrigin.PORTAL,  # only the portal's scripts say why in their stderr
    }


def _save_history(account: ClusterAccount, reading: Future, since, now) -> list[Job]:
    """The user's jobs from accounting, those submitted outside the portal included
    (jobs.cluster.history); a failed read is tried again at the next poll, and stops nothing."""
    try:
        found = history.save(account, reading.result(), since, now)
    except ClusterError as error:
        logger.warning("Jobs of %s not read from accounting: %s", account, error.message)
        return []
    except DATABASE_GONE:
        raise  # the whole poll is tried again (poll_clusters)
    except Exception:
        logger.exception("Jobs of %s not read from accounting", account)
        return []
    if found:
        logger.debug("Found %d jobs of %s in its accounting", len(found), account)
    return found


def _say_why_scripts_stopped(account: ClusterAccount) -> None:
    """A portal script that stopped itself (no data, a variable the site did not set) said why in
    one line of its stderr: that line becomes the job's message. One read per such job; a read
    that fails is tried again at the next poll, for as long as GPU samples are."""
    since = timezone.now() - timedelta(seconds=sample_files.FINAL_READ_SECONDS)
    for job in account.jobs.filter(**_unexplained_stops(since)):
        try:
            line = remote.stop_line(job)
        except ClusterError as error:
            logger.warning("Why job %s stopped was not read: %s", job.pk, error.message)
            continue
        if line:
            job.message = line
            Job.objects.filter(pk=job.pk).update(message=line)


def _logins_to_poll(now) -> QuerySet[ClusterAccount]:
    active = Q(jobs__state__in=JobState.active())
    # A job that ended lately may have its sampler's last lines still to read.
    since = now - timedelta(seconds=sample_files.FINAL_READ_SECONDS)
    unread = Q(jobs__ended__gte=since, jobs__sample_files__finished=False)
    return (
        ClusterAccount.objects.filter(
            active
            | unread
            | Q(**{f"jobs__{k}": v for k, v in _unexplained_stops(since).items()})
            | history.due(now)
        )
        .select_related("cluster")
        .distinct()
    )
