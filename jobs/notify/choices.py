"""Whose choice applies to a job: its own, made on its page, else its owner's default."""

from collections.abc import Iterable

from jobs.models import Job, JobNotificationChoice, NotificationDefaults, NotificationSwitches


def defaults_of(user) -> NotificationDefaults:
    """The user's default; an unsaved one with the fields' defaults until they save theirs."""
    return NotificationDefaults.objects.filter(owner=user).first() or NotificationDefaults(
        owner=user
    )


def choice_for(job: Job) -> NotificationSwitches:
    own = JobNotificationChoice.objects.filter(job=job).first()
    return own or defaults_of(job.owner)


def choices_for(jobs: Iterable[Job]) -> dict[int, NotificationSwitches]:
    """Each job's choice, in two queries whatever the number of jobs."""
    jobs = list(jobs)
    own = {c.job_id: c for c in JobNotificationChoice.objects.filter(job__in=jobs)}
    owners = {job.owner_id for job in jobs if job.pk not in own}
    defaults = {d.owner_id: d for d in NotificationDefaults.objects.filter(owner__in=owners)}
    return {
        job.pk: own.get(job.pk) or defaults.get(job.owner_id) or NotificationDefaults()
        for job in jobs
    }
