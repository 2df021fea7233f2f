"""Celery tasks: thin, safe to run twice. They take primary keys, load, call the cluster through
jobs.cluster.remote, and save. They sit above jobs.polling, jobs.cluster and jobs.gpu, which they
orchestrate: a submission gets its GPU monitoring here; beat's poll sends each due login's poll
to the poll queue (jobs.polling says which and does one)."""

import logging
import math
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerUnreachable

from guidance.engine.slurm_refusals import explain_refusal
from guidance.models import Cluster
from jobs import poll_leases, polling
from jobs.cluster import cluster_load, reader_poll, remote
from jobs.cluster.errors import ClusterError
from jobs.gpu.monitoring import with_monitoring
from jobs.models import ClusterAccount, Job, JobState
from jobs.notify import mail, record
from jobs.polling import DATABASE_GONE

logger = logging.getLogger(__name__)
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
    jobs = Job.objects.select_related("account__cluster").only(*SUBMIT_FIELDS)
    job = jobs.filter(pk=job_id).first()
    if job is None:
        # Deleted since it was queued (its login removed, say): nothing is left to submit.
        logger.info("Job %s no longer exists: nothing to submit", job_id)
        return
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
        polling.wake(pk=job.account_id)  # its first states come at the next beat
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
    """Beat's poll, every POLL_SECONDS: sends one `poll_logins` per POLL_BATCH logins that are
    due, and one `read_cluster_load` per cluster, to the POLL_QUEUE, so that polls spread over
    every worker of that queue on every machine; then sends the e-mails a failing mail server
    left for later. A login whose poll is still queued or running is held
    (jobs.polling.hold_all) and skipped.

    Called directly or with apply() (tests, benches, a shell), it polls every login with
    something to poll in this process instead, back-off or not: one squeue and one sacct per
    login, then the new lines of its GPU sample files; the history read where due; and each
    cluster's sinfo and queue on a thread beside them."""
    try:
        if self.request.called_directly or self.request.is_eager:
            _poll_everything_here(self.request.id or str(uuid.uuid4()))
        else:
            _send_polls()
        mail.send_due()
    except DATABASE_GONE as error:
        if self.request.called_directly or self.request.retries >= self.max_retries:
            raise  # beat's next polls take over, once the holds expire
        logger.warning("Polling stopped on the database, trying again: %s", error)
        raise self.retry(countdown=RETRY_DELAYS[self.request.retries]) from None


def _poll_options() -> dict:
    # A task still queued once its login's hold has expired is dropped: the login was sent again.
    return {"queue": settings.POLL_QUEUE, "expires": polling.POLL_HOLD_SECONDS}


def _send_polls() -> None:
    options = _poll_options()
    for cluster in cluster_load.clusters_to_read():
        read_cluster_load.apply_async([cluster.pk], **options)
    due = list(polling.due_logins(timezone.now()))
    clusters = {account.cluster for account in due}
    # A cluster with a reader: one task reads all its logins' jobs, whatever their number.
    whole = {cluster.pk for cluster in clusters if reader_poll.configured(cluster)}
    for cluster_id in whole:
        poll_cluster.apply_async([cluster_id], **options)
    sent = _send_login_polls([account for account in due if account.cluster_id not in whole])
    logger.debug("Sent %d polls of logins and %d of whole clusters", sent, len(whole))


def _send_login_polls(accounts: list[ClusterAccount], *, states_read: bool = False) -> int:
    """Polls of the logins that no other poll holds, POLL_BATCH logins a task, all held at once
    for this dispatch; how many logins were sent."""
    dispatch = str(uuid.uuid4())
    held = polling.hold_all([account.pk for account in accounts], dispatch)
    pks = [account.pk for account in accounts if account.pk in held]
    for sent in range(0, len(pks), settings.POLL_BATCH):
        batch = pks[sent : sent + settings.POLL_BATCH]
        try:
            poll_logins.apply_async(
                [batch], {"states_read": states_read, "holder": dispatch}, **_poll_options()
            )
        except BrokerUnreachable as error:
            polling.release(pks[sent:], dispatch)
            logger.warning("The task queue did not take the polls: %s", error)
            return sent
    return len(pks)


@shared_task(name="jobs.tasks.poll_cluster", bind=True, max_retries=len(RETRY_DELAYS))
def poll_cluster(self, cluster_id: int) -> None:
    """Every login's jobs on a cluster with a reader (jobs.cluster.reader_poll), back-off or
    not: the same few Slurm commands for 10 logins or 1,000. Then the GPU samples and stop lines
    of those that have some, in `poll_logins` batches (SFTP, no Slurm command). A reader that does
    not answer hands this cycle to the logins' own polls."""
    holder = self.request.id or str(uuid.uuid4())
    try:
        cluster = Cluster.objects.filter(pk=cluster_id).first()
        if cluster is None:
            return
        now = timezone.now()
        accounts = list(polling.due_logins(now, on_schedule=False).filter(cluster=cluster))
        with poll_leases.keep(holder):  # a killed worker's reader is free again within a lease
            read = _through_reader(cluster, accounts, now, holder, poll_leases.lease_seconds())
        if read is None:
            _send_login_polls(accounts)
            return
        _send_login_polls(polling.with_files_to_read(read, now), states_read=True)
        mail.send_due()
    except DATABASE_GONE as error:
        if self.request.called_directly or self.request.retries >= self.max_retries:
            raise  # the reader's hold expires and beat sends the cluster again
        logger.warning("Polling stopped on the database, trying again: %s", error)
        raise self.retry(countdown=RETRY_DELAYS[self.request.retries]) from None


def _through_reader(
    cluster: Cluster, accounts: list, now, holder: str, hold_seconds: float | None = None
) -> list | None:
    """The logins the cluster's reader read (none while another worker reads it); None when the
    reader did not answer."""
    try:
        return reader_poll.poll_cluster(cluster, accounts, now, holder, hold_seconds)
    except ClusterError as error:
        logger.warning("%s polled login by login: its reader says %s", cluster, error.message)
        return None


@shared_task(name="jobs.tasks.poll_logins", bind=True, max_retries=len(RETRY_DELAYS))
def poll_logins(
    self, account_ids: list[int], states_read: bool = False, holder: str | None = None
) -> None:
    """These logins' polls one after another (jobs.polling.poll_login), under the hold their
    dispatcher took for them (`holder`); one login's failure costs the others nothing. A batch
    cut short by the database going away is tried again whole by the same task, which takes its
    holds back at once (a login polled twice saves nothing twice)."""
    _poll_each(self, account_ids, states_read, holder)


@shared_task(name="jobs.tasks.poll_login", bind=True, max_retries=len(RETRY_DELAYS))
def poll_login(self, account_id: int, states_read: bool = False, holder: str | None = None) -> None:
    """One login's poll, as a portal before batches queued it: a batch of one."""
    _poll_each(self, [account_id], states_read, holder)


def _poll_each(task, account_ids: list[int], states_read: bool, holder: str | None) -> None:
    holder = holder or task.request.id or str(uuid.uuid4())
    changed = False
    lease = poll_leases.lease_seconds()
    try:
        logins = ClusterAccount.objects.select_related("cluster").filter(pk__in=account_ids)
        with poll_leases.keep(holder):  # a killed worker's logins are free again within a lease
            changed = _poll_held(logins, holder, states_read, lease)
    except DATABASE_GONE as error:
        if task.request.called_directly or task.request.retries >= task.max_retries:
            raise  # the holds expire and beat sends the logins again
        logger.warning("Polling stopped on the database, trying again: %s", error)
        raise task.retry(countdown=RETRY_DELAYS[task.request.retries]) from None
    if changed:
        mail.send_due()  # a job started or ended: its owner hears now, not at the next beat


def _poll_held(logins, holder: str, states_read: bool, lease: float) -> bool:
    changed = False
    for account in logins:  # a login deleted meanwhile is not there
        try:
            changed |= polling.poll_login(
                account, holder, states_read=states_read, hold_seconds=lease
            )
        except DATABASE_GONE:
            raise
        except Exception:
            logger.exception("The poll of %s failed", account)
    return changed


@shared_task(name="jobs.tasks.read_cluster_load")
def read_cluster_load(cluster_id: int) -> None:
    """A cluster's GPUs and pending queue (jobs.cluster.cluster_load), once per cycle whatever
    the number of workers: the first task to hold it reads it, the others find it read."""
    cluster = Cluster.objects.filter(pk=cluster_id).first()
    taken = cluster_load.take(cluster, str(uuid.uuid4())) if cluster else None
    if taken is not None:
        load, account = taken
        cluster_load.finish(load, cluster, lambda: remote.read_load(account))


def _poll_everything_here(holder: str) -> None:
    now = timezone.now()
    with ThreadPoolExecutor(max_workers=2) as background:
        started = _start_cluster_reads(holder, background)
        due = list(polling.due_logins(now, on_schedule=False))
        for cluster in {account.cluster for account in due}:
            if not reader_poll.configured(cluster):
                continue
            accounts = [account for account in due if account.cluster_id == cluster.pk]
            if (read := _through_reader(cluster, accounts, now, holder)) is None:
                continue
            for account in polling.with_files_to_read(read, now):
                polling.poll_login(account, holder, states_read=True)
            due = [account for account in due if account.cluster_id != cluster.pk]
        for account in due:
            polling.poll_login(account, holder)
        _finish_cluster_reads(started)


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
