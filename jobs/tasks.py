"""Celery tasks: thin, safe to run twice. They take primary keys, call jobs.remote, and save."""

from celery import shared_task
from django.db.models import Min
from django.utils import timezone

from jobs import remote, tracking
from jobs.gateway import ClusterError
from jobs.models import ClusterAccount, Job, JobState

# Seconds before each retry of a submission the cluster could not take: 2, 4, 8, 16.
RETRY_DELAYS = (2, 4, 8, 16)


@shared_task(bind=True, max_retries=len(RETRY_DELAYS), acks_late=True)
def submit_job(self, job_id: int) -> None:
    job = Job.objects.select_related("account__cluster").get(pk=job_id)
    if job.state != JobState.SUBMITTING or job.slurm_id:
        return  # already done: a second delivery of the same task changes nothing
    look_first = job.submit_started is not None
    if not look_first:
        job.submit_started = timezone.now()
        job.save(update_fields=["submit_started"])
    try:
        slurm_id = remote.submit(job, look_first)
    except remote.Rejected as rejected:
        job.submission_failed(remote.explain(rejected.message))
    except ClusterError as error:
        if error.retryable and self.request.retries < self.max_retries:
            job.events.create(state=job.state, detail=f"{error.message} Trying again.")
            raise self.retry(countdown=RETRY_DELAYS[self.request.retries]) from None
        job.submission_failed(error.message)
    else:
        job.submitted_as(slurm_id)


@shared_task
def poll_clusters() -> None:
    """One squeue and one sacct per login with active jobs, whatever the number of jobs."""
    logins = (
        ClusterAccount.objects.filter(jobs__state__in=JobState.active())
        .select_related("cluster")
        .annotate(since=Min("jobs__submitted"))
        .distinct()
    )
    for account in logins:
        jobs = list(account.jobs.filter(state__in=JobState.active()))
        try:
            snapshot = remote.poll(account, account.since, [j.slurm_id for j in jobs])
        except ClusterError:
            Job.objects.filter(pk__in=[j.pk for j in jobs]).update(stale=True)
            continue
        tracking.apply(snapshot, jobs)
