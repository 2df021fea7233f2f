"""Events recorded as they are seen: in the transaction that saves the state or the warning, so a
poll that is cut short records nothing, and once per job and event (the table's unique
constraint), so a poll repeated after a fault, or a second worker, records nothing twice."""

from collections.abc import Iterable

from jobs.models import EmailStatus, Job, JobState, Notification, NotifyEvent
from jobs.notify.choices import choices_for

# Final states in which the job did not do its work; the other final ones (COMPLETED, CANCELLED,
# REVOKED) end it.
FAILURES = frozenset(
    {
        JobState.FAILED, JobState.OUT_OF_MEMORY, JobState.TIMEOUT, JobState.NODE_FAIL,
        JobState.BOOT_FAIL, JobState.DEADLINE, JobState.PREEMPTED,
    }
)  # fmt: skip


def events_of(before: str, after: str) -> list[NotifyEvent]:
    """What a move from state `before` to `after` tells the owner. A job seen only once it had
    ended (a short one, between two polls) has ended without being seen to start."""
    if before == after:
        return []
    if after == JobState.RUNNING:
        return [NotifyEvent.STARTED]
    if after in JobState.final():
        return [NotifyEvent.FAILED if after in FAILURES else NotifyEvent.ENDED]
    return []


def state_changes(jobs: Iterable[Job], states_before: dict[int, str]) -> None:
    """Records what the poll's moves mean; called by jobs.cluster.tracking.apply inside its
    transaction, after the jobs are saved."""
    happened = [
        (job, event) for job in jobs for event in events_of(states_before[job.pk], job.state)
    ]
    _record(happened)


def submission_failed(job: Job) -> None:
    """The submission task gave up on the job (jobs.tasks.submit_job)."""
    _record([(job, NotifyEvent.NOT_SUBMITTED)])


def gpus_idle(job: Job) -> None:
    """The job's GPU warning has just appeared (jobs.gpu.efficiency.refresh_warning)."""
    _record([(job, NotifyEvent.GPUS_IDLE)])


def _record(happened: list[tuple[Job, NotifyEvent]]) -> None:
    if not happened:
        return  # most polls: no query at all
    choices = choices_for(job for job, _ in happened)
    rows = []
    for job, event in happened:
        choice = choices[job.pk]
        if not choice.wants(event) or not (choice.by_email or choice.in_browser):
            continue
        rows.append(
            Notification(
                owner_id=job.owner_id,
                job=job,
                event=event,
                state=job.state,
                in_browser=choice.in_browser,
                email_status=EmailStatus.DUE if choice.by_email else EmailStatus.NONE,
            )
        )
    # A row that exists already was recorded by an earlier poll or another worker: kept as it is.
    Notification.objects.bulk_create(rows, ignore_conflicts=True)
