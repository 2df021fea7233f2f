"""Which logins are polled when, and one login's poll.

Beat's dispatcher (jobs.tasks.poll_clusters) asks `due_logins`, holds them (`hold_all`) and
sends a task per POLL_BATCH logins; the task polls each (`poll_login`) and schedules its next
poll (`back_off`). A login whose jobs stayed as they were is polled less and less often, up to
POLL_MAX_SECONDS apart, so that the cost follows activity; a change, a submission or its owner
opening a job page (`wake`) brings it back to every POLL_SECONDS.
"""

import contextlib
import logging
import time
from collections import defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError
from django.db.models import Case, F, Q, QuerySet, Value, When
from django.utils import timezone

from jobs.cluster import history, login_group, remote, tracking
from jobs.cluster.errors import ClusterError
from jobs.gpu import sample_files
from jobs.models import ClusterAccount, Job, JobOrigin, JobState
from jobs.script_markers import STOP_STATUS

logger = logging.getLogger("jobs.tasks")  # its lines are the workers' (tests read them)
# The database is unreachable or restarting, as opposed to refusing data (DataError and the like).
DATABASE_GONE = (OperationalError, InterfaceError)

# How long a login is held for one poll, from the moment it is sent to a worker: longer than a
# poll takes with the controller down (18 s measured: squeue waits for it) plus the GPU samples'
# reads and a busy queue's wait. A task still queued after that is dropped (its `expires`), and
# the login is sent again.
POLL_HOLD_SECONDS = 120
# Beyond this many quiet polls in a row the wait is POLL_MAX_SECONDS anyway.
QUIET_POLLS_COUNTED = 16


def due_logins(now: datetime, *, on_schedule: bool = True) -> QuerySet[ClusterAccount]:
    """Logins with something to poll: active jobs, a sampler's last lines, a stopped script's
    reason, or a history read that is due. `on_schedule`: only those whose back-off has passed
    (beat's dispatcher); a direct call polls them all."""
    active = Q(jobs__state__in=JobState.active())
    # A job that ended lately may have its sampler's last lines still to read.
    since = now - timedelta(seconds=sample_files.FINAL_READ_SECONDS)
    unread = Q(jobs__ended__gte=since, jobs__sample_files__finished=False)
    stopped = Q(**{f"jobs__{k}": v for k, v in _unexplained_stops(since).items()})
    wanted = ClusterAccount.objects.filter(active | unread | stopped | history.due(now))
    # Logins that share one Unix user are polled as one, through their group's poller.
    logins = ClusterAccount.objects.filter(pk__in=login_group.pollers(wanted))
    if on_schedule:
        logins = logins.filter(Q(poll_after__isnull=True) | Q(poll_after__lte=now))
        logins = logins.filter(_free(now, holder=None))  # a poll still queued or running
    return logins.select_related("cluster").distinct()


def hold(account_pk: int, holder: str, seconds: float = POLL_HOLD_SECONDS) -> bool:
    """Takes the login for `holder` (a poll task's id) for `seconds`: a worker that dies while
    polling holds it no longer than that (a worker's task takes a lease its process renews:
    jobs.poll_leases). The holder may take it again (the dispatcher takes it for the task it
    sends, the task takes it once it runs)."""
    now = timezone.now()
    until = now + timedelta(seconds=seconds)
    held = ClusterAccount.objects.filter(_free(now, holder), pk=account_pk)
    return held.update(polled_until=until, polled_by=holder) == 1


def hold_all(account_pks: list[int], holder: str) -> set[int]:
    """`hold` for many logins in two statements (beat's dispatcher, whose tasks then poll under
    its `holder`): those of `account_pks` now held for it."""
    now = timezone.now()
    until = now + timedelta(seconds=POLL_HOLD_SECONDS)
    free = ClusterAccount.objects.filter(_free(now, holder), pk__in=account_pks)
    free.update(polled_until=until, polled_by=holder)
    held = ClusterAccount.objects.filter(pk__in=account_pks, polled_by=holder)
    return set(held.values_list("pk", flat=True))


def _free(now: datetime, holder: str | None) -> Q:
    """Logins no poll holds, or only `holder`'s."""
    free = Q(polled_until__isnull=True) | Q(polled_until__lt=now)
    return free | Q(polled_by=holder) if holder else free


def release(account_pks: list[int], holder: str) -> None:
    held = ClusterAccount.objects.filter(pk__in=account_pks, polled_by=holder)
    with contextlib.suppress(DatabaseError):  # the database is gone: the hold expires
        held.update(polled_until=None)


def wake(**logins: object) -> None:
    """Polls these logins (filtered as ClusterAccount.objects.filter) at the next beat: their
    owner is looking, or has just submitted. Their whole login groups: the poller may be
    another user's login. Their next poll is due now (`poll_after`), which is also what a job's
    staleness counts from (Job.unchecked)."""
    now = timezone.now()
    quiet = Q(quiet_polls__gt=0) | Q(poll_after__gt=now)
    group = ClusterAccount.objects.sharing_with(ClusterAccount.objects.filter(**logins))
    group.filter(quiet).update(quiet_polls=0, poll_after=now)


def back_off(account: ClusterAccount, changed: bool, now: datetime, *, releasing: str = "") -> None:
    """The login's next poll: at the next beat after a change; after each quiet poll twice as
    long as the last wait, up to POLL_MAX_SECONDS (no back-off when that is POLL_SECONDS or
    less). `releasing`: the holder whose hold this ends, in the same statement (`release`)."""
    quiet = 0 if changed else min(account.quiet_polls + 1, QUIET_POLLS_COUNTED)
    wait = min(settings.POLL_SECONDS * 2**quiet, settings.POLL_MAX_SECONDS) if quiet else 0
    after = now + timedelta(seconds=wait) if wait > settings.POLL_SECONDS else None
    # Unless a wake came while this poll ran: the owner's click wins.
    as_read = Q(quiet_polls=account.quiet_polls)
    update = {
        "quiet_polls": _if(as_read, quiet, "quiet_polls"),
        "poll_after": _if(as_read, after, "poll_after"),
    }
    if releasing:
        update["polled_until"] = _if(Q(polled_by=releasing), None, "polled_until")
    ClusterAccount.objects.filter(pk=account.pk).update(**update)
    account.quiet_polls, account.poll_after = quiet, after


def _if(condition: Q, value: object, field: str) -> Case:
    """`value` for the field where the row meets `condition`, else what the row has."""
    kept = ClusterAccount._meta.get_field(field)
    return Case(When(condition, then=Value(value)), default=F(field), output_field=kept)


def poll_login(
    account: ClusterAccount,
    holder: str,
    *,
    states_read: bool = False,
    hold_seconds: float = POLL_HOLD_SECONDS,
) -> bool:
    """Polls one login under its hold and schedules its next poll; nothing when another poll
    holds it. Whether any of its jobs changed. `states_read`: a cluster-wide reader has read its
    jobs' states already (jobs.cluster.reader_poll): only its files are read, over SSH but with no
    Slurm command. `hold_seconds`: how long the hold lasts unless renewed (`hold`)."""
    if not hold(account.pk, holder, hold_seconds):
        return False
    began = time.monotonic()
    try:
        if states_read:
            active = login_group.jobs_of(account).filter(state__in=JobState.active())
            _read_files(account, list(active))
        else:
            changed = _poll(account)
    except BaseException:
        release([account.pk], holder)
        raise
    if states_read:
        release([account.pk], holder)
        return False
    # Inside the hold: how long polls take, and (tests/test_two_workers.py) that two workers
    # never poll one login at once.
    logger.debug("Polled %s in %.0f ms", account, (time.monotonic() - began) * 1000)
    back_off(account, changed, timezone.now(), releasing=holder)
    return changed


def _poll(account: ClusterAccount) -> bool:
    """Whether any of the login's jobs changed (or new ones were found)."""
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
        jobs, changed = _poll_states(account)
        if reading is not None and (found := _save_history(account, reading, history_since, now)):
            # Accounting lists an array's tasks only once they start: the queue has the rest.
            _poll_states(account, found)
            changed = True
    if jobs is None:
        return False  # the login did not answer: its jobs are stale
    _read_files(account, jobs)
    return changed


def with_files_to_read(accounts: list[ClusterAccount], now: datetime) -> list[ClusterAccount]:
    """Those of `accounts` with GPU samples or a stopped script's reason to read."""
    since = now - timedelta(seconds=sample_files.FINAL_READ_SECONDS)
    started = Q(jobs__state__in=JobState.active(), jobs__started__isnull=False)
    running = started & Q(jobs__origin=JobOrigin.PORTAL)  # outside jobs have no sampler
    unread = Q(jobs__ended__gte=since, jobs__sample_files__finished=False)
    stopped = Q(**{f"jobs__{k}": v for k, v in _unexplained_stops(since).items()})
    given = ClusterAccount.objects.filter(pk__in=[account.pk for account in accounts])
    reading = ClusterAccount.objects.filter(running | unread | stopped).sharing_with(given)
    wanted = set(reading.values_list("cluster_id", "username"))  # a login group's files
    return [account for account in accounts if (account.cluster_id, account.username) in wanted]


def _read_files(account: ClusterAccount, jobs: list[Job]) -> None:
    """What a poll reads besides Slurm's answers: stopped scripts' reasons and GPU samples, of
    each login of the group that has jobs running or ended lately, through that login (its
    jobs' folders and files, as it submitted them)."""
    # Both come from jobs running or ended lately; most polls find none ended (one cheap query
    # instead of two that look for what ended jobs left to read).
    since = timezone.now() - timedelta(seconds=sample_files.FINAL_READ_SECONDS)
    ended = login_group.jobs_of(account).filter(ended__gte=since)
    ended_of = set(ended.values_list("account_id", flat=True).distinct())
    running: dict[int, list[Job]] = defaultdict(list)
    for job in jobs:
        running[job.account_id].append(job)
    logins = [account]
    if others := (set(running) | ended_of) - {account.pk}:
        logins += login_group.members(account).filter(pk__in=others).select_related("cluster")
    for login in logins:
        _read_login_files(login, running.get(login.pk, []), login.pk in ended_of)


def _read_login_files(account: ClusterAccount, jobs: list[Job], any_ended: bool) -> None:
    if any_ended:
        _say_why_scripts_stopped(account)
    # GPU samples are read with the states they belong to; failing to read them marks no job
    # stale (the states are fresh) and costs nothing but a retry next poll.
    try:
        portal_jobs = [job for job in jobs if not job.is_outside]
        sample_files.collect(account, portal_jobs, any_ended=any_ended)
    except ClusterError as error:
        logger.warning("GPU samples of %s not read: %s", account, error.message)
    except DATABASE_GONE:
        raise  # the whole poll is tried again (the task's retry)
    except Exception:
        # One login's bad data must not stop the others' polls.
        logger.exception("GPU samples of %s not stored", account)


def _poll_states(account: ClusterAccount, jobs: list[Job] | None = None) -> tuple:
    """squeue and sacct for the active jobs of the login's group (or `jobs`): the jobs, None
    when the login did not answer, and whether any changed."""
    if jobs is None:  # the whole login group's, in one squeue and one sacct
        jobs = list(login_group.jobs_of(account).filter(state__in=JobState.active()))
    if not jobs:
        return jobs, False
    try:
        since = min(job.submitted or job.created for job in jobs)
        snapshot = login_group.poll(account, since, [job.slurm_id for job in jobs])
    except ClusterError:
        Job.objects.filter(pk__in=[job.pk for job in jobs]).update(stale=True)
        return None, False
    return jobs, bool(tracking.apply(snapshot, jobs))


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
        raise  # the whole poll is tried again (the task's retry)
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
