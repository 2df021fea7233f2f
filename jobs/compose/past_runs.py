"""Which of the user's earlier jobs are runs of what they compose now, and what those runs used
(the figures and the proposal are guidance/engine/history.py's)."""

from dataclasses import replace

from django.db.models import Max, Q, QuerySet

from guidance.engine import Recommendation
from guidance.engine.history import History, Limits, Outcome, PastRun, summarize
from guidance.engine.slurm_time import parse_seconds
from guidance.models import Cluster
from jobs.compose import sweep_script
from jobs.compose.from_form import Composed, with_reasons
from jobs.models import Composition, Job, JobOrigin, JobState
from jobs.script_markers import one_task_at_a_time

# The most recent runs say most about the job as it is now; older ones were another version.
RECENT = 20

_OUTCOMES = {
    JobState.COMPLETED: Outcome.COMPLETED,
    JobState.TIMEOUT: Outcome.TIMED_OUT,
    JobState.DEADLINE: Outcome.TIMED_OUT,
    JobState.OUT_OF_MEMORY: Outcome.OUT_OF_MEMORY,
    JobState.CANCELLED: Outcome.CANCELLED,
    JobState.PREEMPTED: Outcome.CANCELLED,
    JobState.REVOKED: Outcome.CANCELLED,
}


def similar_jobs(
    user, cluster: Cluster, command: str, job_name: str, composition: Composition | None = None
) -> QuerySet:
    """The user's own jobs on `cluster` (never those of a shared login's other members) that ran
    this composition or this command. Slurm's accounting does not keep a job's command, so a job
    submitted outside the portal counts when it has this job name."""
    alike = Q(pk__in=[])  # nothing, until a command, composition or name says what is alike
    if command.strip():
        alike |= Q(composition__fields__command__in=_as_typed(command))
    if composition is not None:
        alike |= Q(composition=composition)
    if job_name.strip():
        alike |= Q(origin=JobOrigin.OUTSIDE, name=job_name)
    return (
        Job.objects.filter(owner=user, account__cluster=cluster, started__isnull=False)
        .filter(alike)
        .annotate(gpu_memory_peak_mb=Max("gpu_devices__peak_memory_mb"))
        .order_by("-started")[:RECENT]
    )


def _as_typed(command: str) -> list[str]:
    """The ways a saved composition may hold this command: it keeps what the browser sent, with
    the textarea's CRLF line breaks and a last line break the form's value has lost."""
    command = command.replace("\r\n", "\n").strip()
    return [
        base + end
        for base in {command, command.replace("\n", "\r\n")}
        for end in ("", "\n", "\r\n")
    ]


def past_run(job: Job) -> PastRun:
    if job.is_final:
        outcome = _OUTCOMES.get(JobState(job.state), Outcome.FAILED)
    else:
        outcome = Outcome.RUNNING
    elapsed, limit = job.one_task
    return PastRun(
        label=f"job {job.slurm_id or job.pk}",
        outcome=outcome,
        elapsed_seconds=elapsed,
        time_limit_seconds=limit,
        sizes_time=not (chained(job.script) or sweep_script.runs_are_grouped(job.script)),
        max_rss_mb=job.max_rss_mb,
        requested_memory_mb=job.requested_memory_mb,
        cpu_seconds=job.cpu_seconds,
        cpus=job.cpus,
        gpus=job.gpus,
        gpu_busy_percent=job.gpu_utilization,
        gpu_memory_peak_mb=getattr(job, "gpu_memory_peak_mb", None),
    )


def chained(script: str) -> bool:
    """Whether the job's parts resume one another (a chain, or a sweep of chains), so that a
    part runs until the checkpoint warning whatever the work needs."""
    if sweep_script.runs_in(script):
        return sweep_script.runs_are_chains(script)
    return one_task_at_a_time(script)


def limits(rec: Recommendation, per_run: bool = False) -> Limits:
    """What the partition the engine chose allows; GPUs are per node times the nodes asked."""
    partition = rec.choice.partition
    nodes = rec.resources.nodes.value
    return Limits(
        max_minutes=int(partition.max_hours * 60),
        per_run=per_run,
        memory_mb=partition.memory_per_node_mb or None,
        gpus=partition.gpus_per_node * nodes or None,
        target_percent=rec.cluster.policy.utilization_target_percent,
    )


def history(
    user, data: dict, rec: Recommendation, composition: Composition | None = None
) -> History | None:
    """The summary of the runs like the form's job (its cleaned data); None when there are none."""
    cluster = data.get("cluster")
    if cluster is None or rec.guidance_only:
        return None
    jobs = list(
        similar_jobs(user, cluster, data.get("command", ""), data.get("job_name", ""), composition)
    )
    if not jobs:
        return None
    # A sweep's time is each run's duration: its plan makes the jobs' limits from it.
    per_run = data.get("sweep") is not None
    return summarize([past_run(j) for j in reversed(jobs)], limits(rec, per_run))


def applied(found: History | None, data: dict) -> tuple[str, ...]:
    """The reasons of the proposal's values the form holds now, for the script's header: a
    value changed since it was applied is the user's, and its reason would no longer hold."""
    if found is None:
        return ()
    held = {
        "time_limit": lambda value: data.get("time_limit") == _minutes(value),
        "hours": lambda value: data.get("hours") == float(value),
        "memory": lambda value: data.get("memory") == int(value.removesuffix("M")),
        "gpu_count": lambda value: data.get("gpu_count") == int(value),
    }
    reasons = [s.reason for s in found.proposal if held[s.field](s.value)]
    if not reasons:
        return ()
    return (f"{found.headline}.", *reasons)


def _minutes(value: str) -> int:
    return -(-int(parse_seconds(value)) // 60)


def attach(
    composed: Composed, user, data: dict, composition: Composition | None = None
) -> Composed:
    """The composed job with the user's earlier runs of it, and the reasons of the values taken
    from them in its script's header."""
    found = history(user, data, composed.recommendation, composition)
    composed = with_reasons(composed, applied(found, data), "From earlier runs")
    return replace(composed, history=found)
