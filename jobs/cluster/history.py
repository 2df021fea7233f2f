"""Every job of a user's, from Slurm's accounting: jobs they submitted with sbatch in a terminal
become portal jobs "submitted outside the portal", followed from then on like the portal's own.

One sacct and one squeue per login, at most every HISTORY_READ_SECONDS: sacct HISTORY_DAYS back
the first time, then from the end of the last read (less MARGIN); squeue for the jobs waiting,
which a window of accounting does not list until they start. Jobs the portal submitted are known
by the tag in their comment and never taken for outside jobs; an array's tasks fold into one job,
as a chain's.

Portal users who share one Unix user (jobs.cluster.login_group) share its read: the group's poller
reads it for all, a job already followed under any of their logins is not made again, and the
window moves on for all of them.
"""

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from jobs.cluster import login_group, remote, tracking
from jobs.cluster.remote import Snapshot
from jobs.models import ClusterAccount, Job, JobEvent, JobOrigin, JobState
from jobs.slurm.sacct import AccountedJob
from jobs.slurm.squeue import QueuedJob

# Read again from a little before the last read ended: the cluster's clock may be behind ours,
# and slurmdbd records a job's end a moment after it happens.
MARGIN = timedelta(minutes=5)
FOUND = "Found in Slurm's accounting: submitted outside the portal."


def due(now: datetime) -> Q:
    """The logins whose history is to be read now: every login with a key, once its last read
    is HISTORY_READ_SECONDS old; none where HISTORY_DAYS is 0 (the read is off). is_due says
    the same of one login in hand."""
    if not settings.HISTORY_DAYS:
        return Q(pk__in=[])
    last_read_before = now - timedelta(seconds=settings.HISTORY_READ_SECONDS)
    return (
        ~Q(private_key_encrypted="")
        & ~Q(cluster__host_key="")
        & (Q(history_read_until__isnull=True) | Q(history_read_until__lte=last_read_before))
    )


def is_due(account: ClusterAccount, now: datetime) -> bool:
    """`due` for a login just read from the database, without asking it again (every poll)."""
    if not settings.HISTORY_DAYS or not account.private_key_encrypted:
        return False
    if not account.cluster.host_key:
        return False
    last = account.history_read_until
    return last is None or last <= now - timedelta(seconds=settings.HISTORY_READ_SECONDS)


def window(account: ClusterAccount, now: datetime) -> datetime | None:
    """Where the read due at `now` starts; None when none is due. `now` is taken before sacct
    runs, so that the next window starts before anything this read could miss."""
    if not is_due(account, now):
        return None
    if _submission_in_flight(account, now):
        # Its Slurm job may be listed before the portal has saved its id; on a cluster whose
        # accounting keeps no comments it would pass for an outside job. The next cycle reads it.
        return None
    last = account.history_read_until
    return last - MARGIN if last else now - timedelta(days=settings.HISTORY_DAYS)


def save(
    account: ClusterAccount, read: remote.History, since: datetime, now: datetime
) -> list[Job]:
    """Makes a job of each one the portal does not follow yet under any login of the account's
    group, and moves the group's window on."""
    with transaction.atomic():
        # Two reads of one group saved at once (a reader's and a login's poll, say) take turns
        # here, so that the second sees the jobs the first made: a Slurm job id is no key for a
        # unique constraint (a controller that lost its state numbers from 1 again).
        group = login_group.members(account)
        list(group.select_for_update().order_by("pk").values_list("pk", flat=True))
        found = _outside_jobs(account, read.accounting, since)
        found += _waiting_outside_jobs(account, read.waiting, since)
        group.update(history_read_until=now)
    account.history_read_until = now
    return found


def _submission_in_flight(account: ClusterAccount, now: datetime) -> bool:
    recent = now - timedelta(seconds=settings.SUBMIT_LEASE_SECONDS)
    in_flight = Q(state=JobState.SUBMITTING, submit_started__gte=recent)
    return login_group.jobs_of(account).filter(in_flight).exists()


def _outside_jobs(account: ClusterAccount, rows: Iterable[AccountedJob], since: datetime) -> list:
    by_job: dict[str, list[AccountedJob]] = {}
    for row in rows:
        by_job.setdefault(str(row.job_id.job_id), []).append(row)
    untagged = {
        slurm_id: parts
        for slurm_id, parts in by_job.items()
        if not any(part.comment.startswith(remote.TAG_PREFIX) for part in parts)
    }
    known = _known_ids(account, list(untagged), since)
    new = {slurm_id: parts for slurm_id, parts in untagged.items() if slurm_id not in known}
    if not new:
        return []
    jobs = Job.objects.bulk_create(
        _job_of(account, slurm_id, parts) for slurm_id, parts in new.items()
    )
    # created is auto_now_add: set it afterwards, so that the list shows them in Slurm's order.
    for job in jobs:
        job.created = job.submitted or job.created
    Job.objects.bulk_update(jobs, ["created"], batch_size=200)
    JobEvent.objects.bulk_create(JobEvent(job=job, state=job.state, detail=FOUND) for job in jobs)
    tracking.apply(Snapshot([], [part for parts in new.values() for part in parts]), jobs)
    return jobs


def _waiting_outside_jobs(account: ClusterAccount, rows: list[QueuedJob], since: datetime) -> list:
    """Jobs waiting in the queue, not started yet: an array's waiting tasks are one job."""
    by_job: dict[str, list[QueuedJob]] = {}
    for row in rows:
        if not row.comment.startswith(remote.TAG_PREFIX):
            by_job.setdefault(str(row.array_job_id), []).append(row)
    known = _known_ids(account, list(by_job), since)
    new = {slurm_id: parts for slurm_id, parts in by_job.items() if slurm_id not in known}
    if not new:
        return []
    jobs = Job.objects.bulk_create(
        Job(
            owner_id=account.owner_id,
            account=account,
            name=(parts[0].name.strip() or f"Slurm job {slurm_id}")[:64],
            script="",
            slurm_id=slurm_id,
            state=JobState.PENDING,
            origin=JobOrigin.OUTSIDE,
            submitted=timezone.now(),
        )
        for slurm_id, parts in new.items()
    )
    JobEvent.objects.bulk_create(JobEvent(job=job, state=job.state, detail=FOUND) for job in jobs)
    tracking.apply(Snapshot([part for parts in new.values() for part in parts], []), jobs)
    return jobs


def _known_ids(account: ClusterAccount, slurm_ids: list[str], since: datetime) -> set[str]:
    """The ids among `slurm_ids` of the jobs the portal follows already under any login of the
    account's group (another portal user's submission included). A job that ended before the
    window is not listed in it: a row of its id is a later job (the controller lost its state
    and numbers from 1 again)."""
    same = Q(ended__isnull=True) | Q(ended__gte=since) | ~Q(state__in=JobState.final())
    known = login_group.jobs_of(account).filter(same, slurm_id__in=slurm_ids)
    return set(known.values_list("slurm_id", flat=True))


def _job_of(account: ClusterAccount, slurm_id: str, parts: list[AccountedJob]) -> Job:
    first = parts[0]
    starts = [part.start for part in parts if part.start] or [p.end for p in parts if p.end]
    return Job(
        owner_id=account.owner_id,
        account=account,
        name=(first.name.strip() or f"Slurm job {slurm_id}")[:64],
        script="",
        slurm_id=slurm_id,
        state=JobState.PENDING,
        origin=JobOrigin.OUTSIDE,
        work_dir=first.work_dir[:300],
        # Slurm printed UTC (values.IN_UTC). A job still pending has no start: now, near enough.
        submitted=min(starts).replace(tzinfo=UTC) if starts else timezone.now(),
    )
