"""A cluster-wide reader: every portal login's jobs on a cluster, read through the cluster's
read-only service login (ClusterReader) with at most three Slurm commands per poll cycle, whatever
the number of logins: one squeue of their users' jobs, one sacct of their active jobs by id, and
one sacct of the accounting of the logins whose history is due (remote.read_cluster).

A row goes to a login group (jobs.cluster.login_group: the portal users who share one Unix user)
only when it is its Unix user's and, for states, one of the group's jobs by id; tracking.apply
still checks the portal's tag. Each group's history is saved once, under one of its logins. What a
login polled through its own key would save is saved the same way (tracking.apply, history.save),
in one transaction per group.
"""

import logging
import uuid
from collections import defaultdict
from datetime import UTC, datetime, timedelta

from django.db import DatabaseError
from django.db.models import Q
from django.utils import timezone

from guidance.models import Cluster
from jobs.cluster import history, login_group, remote, tracking
from jobs.cluster.errors import ClusterError, ErrorKind
from jobs.cluster.remote import ClusterRead, Snapshot
from jobs.models import ClusterAccount, ClusterReader, Job, JobState
from jobs.slurm.states import SlurmState

logger = logging.getLogger(__name__)

# Longer than the three commands take with the controller down (squeue waits ~18 s for it).
READ_HOLD_SECONDS = 60


def configured(cluster: Cluster) -> bool:
    """Whether the cluster's jobs are read through its reader (one query)."""
    return ClusterReader.objects.filter(cluster=cluster, enabled=True).exists()


def poll_cluster(
    cluster: Cluster,
    accounts: list[ClusterAccount],
    now: datetime,
    holder: str = "",
    hold_seconds: float | None = None,
) -> list[ClusterAccount]:
    """Reads the states of all `accounts`' active jobs, and the history of those whose history is
    due, through the cluster's reader, and saves them, once per login group; returns the logins
    read, one per group (its poller), or none when another worker reads the cluster right now.
    `holder` (the task's id) takes back a hold it left; `hold_seconds` (READ_HOLD_SECONDS by
    default) is how long that hold lasts unless renewed (jobs.poll_leases). Raises ClusterError
    when the reader cannot answer: poll each login through its own key then."""
    holder = holder or str(uuid.uuid4())
    reader = _hold(cluster, holder, hold_seconds or READ_HOLD_SECONDS)
    if reader is None:
        return []
    # One login per Unix user: the group's poller, whose history window stands for the group.
    given = ClusterAccount.objects.filter(pk__in=[account.pk for account in accounts])
    by_pk = {account.pk: account for account in accounts}
    others = ClusterAccount.objects.select_related("cluster")
    pollers = [by_pk.get(pk) or others.get(pk=pk) for pk in login_group.pollers(given)]
    try:
        _read(cluster, reader, pollers, now)
    finally:
        ClusterReader.objects.filter(pk=reader.pk, read_by=holder).update(reading_until=None)
    return pollers


def _hold(cluster: Cluster, holder: str, seconds: float) -> ClusterReader | None:
    now = timezone.now()
    free = Q(reading_until__isnull=True) | Q(reading_until__lt=now) | Q(read_by=holder)
    until = now + timedelta(seconds=seconds)
    readers = ClusterReader.objects.filter(cluster=cluster, enabled=True)
    if readers.filter(free).update(reading_until=until, read_by=holder) == 1:
        return readers.get()
    if not readers.exists():
        raise ClusterError(
            ErrorKind.CONFIG,
            f"{cluster.name} has no cluster-wide reader switched on: its logins are polled one "
            "by one.",
            retryable=False,
        )
    return None  # another worker reads it now


def _read(
    cluster: Cluster, reader: ClusterReader, accounts: list[ClusterAccount], now: datetime
) -> None:
    by_pk = {account.pk: account for account in accounts}
    poller_of = {account.username: account.pk for account in accounts}
    jobs: dict[int, list[Job]] = defaultdict(list)
    group_jobs = Job.objects.filter(
        account__cluster=cluster, account__username__in=list(poller_of), state__in=JobState.active()
    ).select_related("account__cluster")
    for job in group_jobs:
        jobs[poller_of[job.account.username]].append(job)
    windows = _history_windows(accounts, now)
    active = [job for own in jobs.values() for job in own]
    read = remote.read_cluster(
        remote.reader_login(reader, cluster),
        users=sorted({account.username for account in accounts}),
        slurm_ids=sorted({job.slurm_id for job in active}),
        since=min((job.submitted or job.created for job in active), default=now),
        history_users=sorted({by_pk[pk].username for pk in windows}),
        history_since=min(windows.values(), default=None),
    )
    rows = _Rows(read)
    for pk, own in jobs.items():
        username = by_pk[pk].username
        ids = [job.slurm_id for job in own]
        snapshot = Snapshot(
            rows.queued(username, ids), rows.accounted(username, ids), read.accounting_down
        )
        tracking.apply(snapshot, own)
    if windows and read.history is None:
        logger.warning(
            "Jobs of %d logins on %s not read from accounting: %s",
            len(windows),
            cluster,
            read.history_error or "sacct failed",
        )
        return
    for pk, since in windows.items():
        _save_history(by_pk[pk], rows, since, now)


def _history_windows(accounts: list[ClusterAccount], now: datetime) -> dict[int, datetime]:
    """Where each due login's history read starts (history.window), by its pk."""
    windows = {}
    for account in accounts:
        if (since := history.window(account, now)) is not None:
            windows[account.pk] = since
    return windows


def _save_history(account: ClusterAccount, rows: "_Rows", since: datetime, now: datetime) -> None:
    """The login's jobs from its user's accounting in its own window, and the user's jobs waiting
    (which no window lists): those the portal does not follow yet become its jobs."""
    try:
        found = history.save(account, rows.history(account.username, since), since, now)
        if found:
            # Accounting lists an array's tasks only once they start: the queue has the rest.
            ids = [job.slurm_id for job in found]
            tracking.apply(
                Snapshot(
                    rows.queued(account.username, ids),
                    rows.history_accounted(account.username, ids),
                ),
                found,
            )
    except DatabaseError:
        raise  # the whole poll is tried again
    except Exception:
        # One login's bad data must not stop the others' reads; tried again next cycle.
        logger.exception("Jobs of %s not read from accounting", account)


class _Rows:
    """One read's rows, by Unix user and Slurm job id (an array's own id for its tasks)."""

    def __init__(self, read: ClusterRead) -> None:
        self.queue = _by_user_and_id(read.queue, lambda row: row.array_job_id)
        self.accounting = _by_user_and_id(read.accounting, lambda row: row.job_id.job_id)
        self.past = _by_user_and_id(read.history or [], lambda row: row.job_id.job_id)
        self.past_of = defaultdict(list)
        for row in read.history or []:
            self.past_of[row.user].append(row)
        self.waiting = defaultdict(list)
        for row in read.queue:
            if row.state is SlurmState.PENDING:
                self.waiting[row.user].append(row)

    def queued(self, user: str, ids: list[str]) -> list:
        return [row for slurm_id in ids for row in self.queue.get((user, slurm_id), [])]

    def accounted(self, user: str, ids: list[str]) -> list:
        return [row for slurm_id in ids for row in self.accounting.get((user, slurm_id), [])]

    def history_accounted(self, user: str, ids: list[str]) -> list:
        return [row for slurm_id in ids for row in self.past.get((user, slurm_id), [])]

    def history(self, user: str, since: datetime) -> remote.History:
        """The user's accounting rows in the window from `since`, as sacct would list them for
        it alone: running, or ended since then (the read started at the earliest window)."""
        start = since.astimezone(UTC).replace(tzinfo=None)  # sacct printed UTC (values.IN_UTC)
        rows = [row for row in self.past_of.get(user, []) if row.end is None or row.end >= start]
        return remote.History(rows, list(self.waiting.get(user, [])))


def _by_user_and_id(rows, job_id) -> dict[tuple[str, str], list]:
    found: dict[tuple[str, str], list] = defaultdict(list)
    for row in rows:
        found[(row.user, str(job_id(row)))].append(row)
    return found
