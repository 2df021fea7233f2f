"""What a poll means for the portal's jobs: Slurm's rows matched to jobs, states and times saved.

squeue knows what is queued or running (and the pending reason); sacct knows how a job ended
(state, exit code and signal, elapsed time) and what it was given and used (partition, GPUs,
CPUs, CPU time, peak memory). A job with array tasks (a chain, or similar runs) keeps a row per
task and takes its state from them; its accounting adds its tasks' times up.
"""

import logging
from datetime import UTC, datetime, timedelta

from django.db import transaction
from django.utils import timezone

from jobs.cluster import remote
from jobs.cluster.remote import Snapshot
from jobs.models import Job, JobState, JobTask
from jobs.notify import record
from jobs.slurm.sacct import AccountedJob
from jobs.slurm.squeue import QueuedJob
from jobs.slurm.states import SlurmState

logger = logging.getLogger(__name__)

UPDATED_FIELDS = [
    "state", "reason", "expected_start", "exit_code", "signal", "elapsed", "started", "ended",
    "nodes", "partition", "gpu_type", "gpus", "cpus", "elapsed_seconds", "time_limit_seconds",
    "longest_task_seconds", "task_time_limit_seconds",
    "cpu_seconds", "max_rss_mb", "requested_memory_mb",
]  # fmt: skip


# Up to this many changed jobs are saved one UPDATE each: building bulk_update's CASE for each
# of UPDATED_FIELDS costs more than the statements it saves (a login's first poll, mostly).
FEW = 3


def _tracked(job: Job) -> tuple:
    return tuple(getattr(job, name) for name in UPDATED_FIELDS)


# The state that tells most about a whole array, given its tasks' states: running first, then
# paused or held (someone has to act), then waiting; then any failure shows, then cancellation,
# then success.
_MOST_TELLING_FIRST = [
    JobState.RUNNING, JobState.SIGNALING, JobState.RESIZING, JobState.CONFIGURING,
    JobState.COMPLETING, JobState.STAGE_OUT, JobState.STOPPED, JobState.SUSPENDED,
    JobState.SPECIAL_EXIT, JobState.REQUEUE_HOLD, JobState.RESV_DEL_HOLD,
    JobState.REQUEUED, JobState.REQUEUE_FED, JobState.PENDING, JobState.UNKNOWN,
    JobState.FAILED, JobState.OUT_OF_MEMORY, JobState.TIMEOUT, JobState.DEADLINE,
    JobState.NODE_FAIL, JobState.BOOT_FAIL, JobState.PREEMPTED,
    JobState.CANCELLED, JobState.REVOKED, JobState.COMPLETED,
]  # fmt: skip
# An array ends only when all its tasks have: every state in which a task may still run comes
# before every final one, and SlurmState alone says which those are.
ARRAY_PRECEDENCE = sorted(_MOST_TELLING_FIRST, key=lambda state: SlurmState(state).is_final)

# Why an ended job waits for its exit code: sacct, which has it, does not answer.
ACCOUNTING_DOWN = "Slurm's accounting does not answer: how it ended shows once it does"

# The state words this process has logged as unknown: once each, not at every poll.
_logged_unknown: set[str] = set()


def _state(row: QueuedJob | AccountedJob) -> JobState:
    """The portal's state for Slurm's: the same name. A word this portal does not know (a later
    Slurm's) reads as UNKNOWN, which is not final: the job is polled on, never shown as running."""
    if row.state is SlurmState.UNKNOWN and row.state_text not in _logged_unknown:
        _logged_unknown.add(row.state_text)
        logger.warning(
            "Slurm reported job state %r, which the portal does not know: its jobs show as "
            "'Unknown state' and are polled on",
            row.state_text,
        )
    return JobState(row.state)


def apply(snapshot: Snapshot, jobs: list[Job]) -> list[Job]:
    """Saves what the snapshot says of `jobs`; returns those that changed."""
    now = timezone.now()
    with transaction.atomic():  # a poll cut short (the database restarting) saves nothing of it
        changed = _changes(snapshot, jobs)
    # Then all of them stamped in one statement: a quiet poll (most are) costs one write, and
    # no transaction (the block above sent nothing).
    Job.objects.filter(pk__in=[job.pk for job in jobs]).update(polled=now, stale=False)
    return changed


def _changes(snapshot: Snapshot, jobs: list[Job]) -> list[Job]:
    """Saves the jobs that the snapshot changes (an array's tasks, each it lists) with their
    state changes; returns them."""
    by_parent: dict[str, list] = {}
    for row in snapshot.accounting:
        task = row.job_id.array_task_id
        by_parent.setdefault(str(row.job_id.job_id), []).append(("acct", task, row))
    for row in snapshot.queue:
        by_parent.setdefault(str(row.array_job_id), []).append(("queue", row.array_task_id, row))
    changed = []
    states_before = {job.pk: job.state for job in jobs}
    for job in jobs:
        rows = [row for row in by_parent.get(job.slurm_id, []) if _is_of(job, row)]
        before = _tracked(job)
        if rows:
            _update(job, rows)
        if snapshot.accounting_down and job.state == JobState.COMPLETING:
            job.reason = ACCOUNTING_DOWN
        if _tracked(job) != before:
            changed.append(job)
    if len(changed) <= FEW:
        for job in changed:
            Job.objects.filter(pk=job.pk).update(
                **{name: getattr(job, name) for name in UPDATED_FIELDS}
            )
    else:
        Job.objects.bulk_update(changed, UPDATED_FIELDS, batch_size=200)
    if changed:
        record.state_changes(changed, states_before)  # in this transaction: once, or not at all
    return changed


def _is_of(job: Job, row: tuple) -> bool:
    # Job ids start again from 1 when a controller loses its state: sacct still lists the earlier
    # job of that id (one that never started, whatever the time window), and squeue may list a new
    # one while ours is still tracked. The comment the portal submitted with tells them apart.
    _, _, found = row
    return not found.comment.startswith(remote.TAG_PREFIX) or found.comment == remote.tag(job)


def _update(job: Job, rows: list) -> None:
    # sacct has the last word on how a job ended; squeue on why it still waits.
    tasks: dict[str, dict] = {}
    for source, task, row in rows:
        seen = tasks.setdefault("" if task is None else str(task), {})
        seen[source] = row
    for seen in tasks.values():
        seen["state"] = _combined_state(seen.get("queue"), seen.get("acct"))
    if len(tasks) == 1 and "" in tasks:
        _take(job, tasks[""])
        return
    states = []
    for task_id, seen in sorted(tasks.items(), key=lambda kv: _task_order(kv[0])):
        if not task_id:
            continue
        acct, queue = seen.get("acct"), seen.get("queue")
        # Where it ran: sacct's list once it has one, else squeue's while it runs.
        nodes = (acct.nodes if acct else []) or (queue.nodes if queue else [])
        JobTask.objects.update_or_create(
            job=job,
            task_id=task_id,
            defaults={
                "slurm_id": f"{job.slurm_id}_{task_id}",
                "state": seen["state"],
                "exit_code": acct.exit_code.code if acct and acct.exit_code else None,
                "started": _aware(acct.start) if acct else None,
                "ended": _aware(acct.end) if acct else None,
                "nodes": ",".join(nodes)[:200],
            },
        )
        states.append(seen["state"])
    waiting = "" in tasks  # the array's not-yet-started tasks show as one pending row
    if waiting:
        states.append(JobState.PENDING)
    _account(job, [seen["acct"] for task_id, seen in tasks.items() if task_id and "acct" in seen])
    state = next((s for s in ARRAY_PRECEDENCE if s in states), JobState.PENDING)
    queued = tasks[""].get("queue") if waiting else None
    _move(job, state, queued.reason if queued else "")
    job.expected_start = _aware(queued.start) if queued and state == JobState.PENDING else None
    parts = list(job.tasks.all())
    if state in JobState.final():
        job.exit_code = max((t.exit_code or 0 for t in parts), default=0)
        job.ended = max((t.ended for t in parts if t.ended), default=None)
    job.started = job.started or min((t.started for t in parts if t.started), default=None)


def _combined_state(queue: QueuedJob | None, acct: AccountedJob | None) -> JobState:
    # sacct has the last word on how a job ended. Until then squeue's word is the controller's
    # own and says more: sacct reads a STOPPED job as RUNNING, a SPECIAL_EXIT one as PENDING.
    if acct is not None and acct.state.is_final and acct.end is None:
        # Just after slurmdbd comes back it lists jobs that ended while it was down as failed,
        # with exit code 0 and no end time, before it has their record: not its last word yet.
        return JobState.COMPLETING
    if acct is not None and (queue is None or acct.state.is_final):
        return _state(acct)
    # squeue lists a job that just ended, without its exit code: wait for sacct's word.
    return JobState.COMPLETING if queue.state.is_final else _state(queue)


def _aware(moment: datetime | None) -> datetime | None:
    # Slurm printed UTC without a zone: its commands run with TZ=UTC (jobs.slurm.values.IN_UTC).
    return moment.replace(tzinfo=UTC) if moment is not None else None


def _task_order(task_id: str) -> tuple[int, str]:
    return (int(task_id), task_id) if task_id.isdigit() else (0, task_id)


def _take(job: Job, seen: dict) -> None:
    queue, acct = seen.get("queue"), seen.get("acct")
    reason = queue.reason if queue else ""
    if seen["state"] == JobState.UNKNOWN:
        reason = (queue or acct).state_text  # Slurm's word: what the user can tell the admins
    _move(job, seen["state"], reason)
    if acct:
        if acct.exit_code and seen["state"] in JobState.final():  # 0 until the job has ended
            job.exit_code, job.signal = acct.exit_code.code, acct.exit_code.signal
        job.elapsed = str(acct.elapsed) if acct.elapsed is not None else ""
        job.started = _aware(acct.start) or job.started
        job.ended = _aware(acct.end)
        job.nodes = ",".join(acct.nodes) or job.nodes
        _account(job, [acct])
    if queue and queue.nodes:
        job.nodes = ",".join(queue.nodes)
    waiting = queue is not None and seen["state"] == JobState.PENDING
    job.expected_start = _aware(queue.start) if waiting else None


def _move(job: Job, state: str, reason: str) -> None:
    reason = "" if reason in ("None", "(null)") else reason
    if state != job.state:
        job.record(state, reason)
    # Why a job waits, is held or is in a state the portal does not know; an ended job has none.
    job.reason = reason if state not in JobState.final() else ""


def _account(job: Job, parts: list[AccountedJob]) -> None:
    """What Slurm allocated and accounted, from a job's one row or its array tasks' rows.

    The tasks' times add up; memory and the allocation are the largest any task had. The time
    limit adds up over the tasks that started, so that elapsed over limit compares like with like.
    Values sacct does not know yet (a pending job's allocation) keep what the job had.
    """
    if not parts:
        return
    job.partition = next((p.partition for p in parts if p.partition), job.partition)[:64]
    allocated = [p for p in parts if p.tres]
    if allocated:
        job.gpus = max(p.gpus for p in allocated)
        job.gpu_type = next((p.gpu_type for p in allocated if p.gpu_type), "")[:64]
        job.cpus = max((p.cpus for p in allocated if p.cpus is not None), default=job.cpus)
    if all(p.elapsed is not None for p in parts):
        job.elapsed_seconds = _seconds(sum((p.elapsed for p in parts), timedelta()))
        job.longest_task_seconds = _seconds(max(p.elapsed for p in parts))
    started = [p for p in parts if p.start is not None]
    if started:
        limits = [p.time_limit for p in started]
        unlimited = any(limit is None for limit in limits)
        job.time_limit_seconds = None if unlimited else _seconds(sum(limits, timedelta()))
        job.task_time_limit_seconds = None if unlimited else _seconds(max(limits))
    else:
        job.time_limit_seconds = _seconds(parts[0].time_limit)
        job.task_time_limit_seconds = job.time_limit_seconds
    if all(p.total_cpu is not None for p in parts):
        job.cpu_seconds = sum(p.total_cpu.total_seconds() for p in parts)
    job.max_rss_mb = max(
        (p.max_rss_mb for p in parts if p.max_rss_mb is not None), default=job.max_rss_mb
    )
    job.requested_memory_mb = max(
        (p.requested_memory_mb for p in parts if p.requested_memory_mb is not None),
        default=job.requested_memory_mb,
    )


def _seconds(duration: timedelta | None) -> int | None:
    return None if duration is None else round(duration.total_seconds())
