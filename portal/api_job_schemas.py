"""What the API's job endpoints take and answer (portal/api_jobs.py): a submission, a job as its
page shows it (state and its meaning, the wait, GPU use, the efficiency report), its output."""

from datetime import datetime
from enum import StrEnum
from typing import Any
from uuid import UUID

from django.http import HttpRequest
from django.urls import reverse
from ninja import Field, Schema
from pydantic import ConfigDict, field_validator
from pydantic_core import PydanticCustomError

from guidance.engine.efficiency import EfficiencyReport
from guidance.engine.script_check.check import MAX_CHARS
from jobs.gpu import efficiency
from jobs.models import Job, JobOrigin, JobState, Via
from jobs.runs import listing, reading
from portal.api_schemas import ScriptIn

# --- Submissions ---------------------------------------------------------------------------

KEY_HELP = (
    "Any text up to 255 characters, new for each job (a UUID, say); the Idempotency-Key header "
    "does the same. Sent again with the same key, the request answers the job the first one "
    "made (200, not 201) and submits nothing."
)


def refuse_nul(value: Any) -> Any:
    if isinstance(value, str) and "\x00" in value:
        # PostgreSQL can hold no NUL, and sbatch refuses a script with one.
        raise PydanticCustomError("null_characters", "Null characters are not allowed.")
    return value


def refuse_empty_script(value: str) -> str:
    if not value.strip():
        raise PydanticCustomError("empty_script", "The script is empty.")
    return value


class ScriptJobIn(Schema):
    """A whole script, written outside the portal's composer."""

    model_config = ConfigDict(extra="forbid")

    cluster: str = Field(max_length=50, description="Slug, as GET /api/v1/clusters lists it.")
    name: str = Field(
        max_length=64,
        description="The job's name and its folder, portal-jobs/<name>, in your home on the "
        "cluster: letters, digits, '.', '_', '+', '-'.",
    )
    script: str = Field(
        max_length=MAX_CHARS,
        description="The sbatch script, starting with #!. Unless it names its own --output and "
        "--error, the portal adds them, into the job's folder, so that GET /jobs/{id}/output "
        "finds them.",
    )
    accept_findings: bool = Field(
        False,
        description="Submit despite the script checker's findings (each answered as a 422 "
        "error of the field 'script' with the checker's code, e.g. 'no_account', unless this "
        "is true), as the composer keeps a hand edit sent again.",
    )
    submission_key: str | None = Field(None, max_length=255, description=KEY_HELP)

    _no_nul = field_validator("*", mode="before")(refuse_nul)
    _not_empty = field_validator("script")(refuse_empty_script)


class ComposedJobIn(ScriptIn):
    """The composer's fields, as POST /script takes them: the script it writes is submitted."""

    submission_key: str | None = Field(None, max_length=255, description=KEY_HELP)

    def form_data(self) -> dict[str, str]:
        data = super().form_data()
        data.pop("submission_key", None)
        return data


# --- Jobs ------------------------------------------------------------------------------------


# A state of the job list's filter: one of the job's states, or a group of them.
StateFilter = StrEnum("StateFilter", {name: name for name in ["active", "final", *JobState.values]})


class Filters(Schema):
    state: StateFilter | None = Field(
        None,
        description="A state, or 'active' (Slurm may still run it) or 'final' (ended, or not "
        "submitted).",
    )
    cluster: str = Field("", max_length=50, description="A cluster's slug.")


class LinksOut(Schema):
    page: str = Field(description="The job's page in the portal.")
    api: str
    output: str = Field(description="The end of its stdout; add ?stream=err for stderr.")


class EventOut(Schema):
    at: datetime
    state: str
    detail: str


class JobOut(Schema):
    id: int
    name: str
    cluster: str = Field(description="The cluster's slug.")
    slurm_id: str = Field(description="Empty until Slurm has taken the job.")
    state: str
    state_label: str
    state_explanation: str = Field(description="What the state means, as the job page says.")
    reason: str = Field(description="Slurm's reason code while the job waits, e.g. 'Priority'.")
    reason_text: str = Field(description="What `reason` means, in words, while the job waits.")
    what_to_do: str = Field(description="What the user can do about it; '' when nothing.")
    message: str = Field(description="What the cluster said: why a submission failed, say.")
    expected_start: datetime | None = Field(description="The scheduler's estimate, if pending.")
    ahead_in_queue: int | None = Field(
        description="Pending jobs of the partition before this one by priority."
    )
    origin: JobOrigin = Field(description="portal, or outside: sbatch run by hand.")
    via: Via = Field(
        description="How it reached the portal: page, api, or mcp (an agent's MCP client)."
    )
    token: str = Field(description="The name of the API token it was submitted with; ''.")
    client: str = Field(description="The client program's name for itself (User-Agent, MCP).")
    plan_id: UUID | None = Field(description="The plan it came from, confirmed by the user.")
    mine: bool = Field(
        description="Yours; false: a job of a login you share with other portal users, which "
        "you see but cannot cancel or read the output of (403)."
    )
    stale: bool = Field(
        description="The last poll could not reach the cluster, or no poll read the job for "
        "more than two poll periods after one was due: `polled` says when it was last read."
    )
    polled: datetime | None = Field(description="When a poll last read the job.")
    created: datetime
    submitted: datetime | None
    started: datetime | None
    ended: datetime | None
    polled: datetime | None = Field(description="When Slurm was last asked about it.")
    exit_code: int | None
    nodes: str
    partition: str
    gpu_type: str
    gpus: int | None
    gpu_utilization: float | None = Field(description="Mean compute use of its GPUs, %.")
    gpu_warning: str = Field(description="Why its GPUs look wasted, if they do.")
    links: LinksOut

    @staticmethod
    def resolve_cluster(job: Job) -> str:
        return job.account.cluster.slug

    @staticmethod
    def resolve_token(job: Job) -> str:
        return job.token.name if job.token else ""

    @staticmethod
    def resolve_plan_id(job: Job) -> UUID | None:
        return getattr(job, "plan", None) and job.plan.pk

    @staticmethod
    def resolve_mine(job: Job, context: dict) -> bool:
        return job.owner_id == context["request"].auth.user.pk

    @staticmethod
    def resolve_stale(job: Job) -> bool:
        return job.looks_stale

    @staticmethod
    def resolve_reason_text(job: Job) -> str:
        return job.pending_reason.meaning

    @staticmethod
    def resolve_what_to_do(job: Job) -> str:
        return job.pending_reason.action

    @staticmethod
    def resolve_state_label(job: Job) -> str:
        return JobState(job.state).label

    @staticmethod
    def resolve_links(job: Job, context: dict) -> dict[str, str]:
        request: HttpRequest = context["request"]
        api = reverse("api:job", kwargs={"job_id": job.pk})
        return {
            "page": request.build_absolute_uri(job.get_absolute_url()),
            "api": request.build_absolute_uri(api),
            "output": request.build_absolute_uri(reverse("api:job_output", args=[job.pk])),
        }


class GpuUseOut(Schema):
    label: str
    mean: float | None = Field(description="Mean utilization, %; null: unknown (MIG).")


class SuggestionOut(Schema):
    field: str = Field(description="The composer's field it changes.")
    value: str
    change: str
    reason: str
    source: str | None


class EfficiencyOut(Schema):
    """The job page's efficiency report, figure for figure."""

    gpu_mean: float | None
    gpus: list[GpuUseOut]
    target: int = Field(description="The cluster's GPU utilization target, %.")
    under_target_percent: float | None = Field(description="Sampled time under the target, %.")
    peak_memory_gb: float | None
    card_memory_gb: float | None
    cpu_percent: float | None
    cpu_time: str
    core_walltime: str
    memory_percent: float | None
    max_rss_mb: float | None
    requested_memory_mb: float | None
    time_percent: float | None
    elapsed: str
    time_limit: str
    gpu_hours: float | None = Field(description="GPU-hours used: GPUs x elapsed.")
    gpu_hours_requested: float | None = Field(description="GPUs x the time limit.")
    energy_kwh: float | None = Field(
        description="What its GPUs used, kWh, from NVML's energy counter; null: unknown (a GPU "
        "without the counter, a MIG slice, no samples), never 0 for not measured."
    )
    suggestions: list[SuggestionOut] = Field(description="For the next run.")


def efficiency_out(report: EfficiencyReport | None) -> dict[str, Any] | None:
    if report is None:
        return None
    return {
        "gpu_mean": report.gpu_mean,
        "gpus": [{"label": u.label, "mean": u.mean} for u in report.gpus],
        "target": report.target,
        "under_target_percent": report.under_target_percent,
        "peak_memory_gb": report.peak_memory_gb,
        "card_memory_gb": report.card_memory_gb,
        "cpu_percent": report.cpu_percent,
        "cpu_time": report.cpu_time,
        "core_walltime": report.core_walltime,
        "memory_percent": report.memory_percent,
        "max_rss_mb": report.facts.max_rss_mb,
        "requested_memory_mb": report.facts.requested_memory_mb,
        "time_percent": report.time_percent,
        "elapsed": report.elapsed,
        "time_limit": report.time_limit,
        "gpu_hours": report.gpu_hours,
        "gpu_hours_requested": report.gpu_hours_requested,
        "energy_kwh": report.energy_kwh,
        "suggestions": [
            {
                "field": s.field,
                "value": s.value,
                "change": s.change,
                "reason": s.reason,
                "source": str(s.source) if s.source else None,
            }
            for s in report.suggestions
        ],
    }


class RunOut(Schema):
    """One run of a sweep, as the job page's Runs table shows it."""

    number: int = Field(description="The run's number in the sweep, as in its folder's name.")
    folder: str = Field(description="Its folder under the results folder, e.g. run-007_lr-0.01.")
    values: dict[str, str] = Field(description="Its parameters' values, by parameter name.")
    state: str = Field(
        description="Its array task's state, or its group's while it waits or runs; COMPLETED "
        "or FAILED from the exit code the run wrote in runs.tsv."
    )
    state_label: str
    outcome: listing.Outcome = Field(
        description="waiting, running, completed, failed (a non-zero exit code, or it did not "
        "finish), or unknown (the job ended and its line could not be read)."
    )
    exit_code: int | None = Field(description="The run's exit code; null until it has ended.")
    elapsed_seconds: int | None = Field(
        description="The run's own time, so far while it runs; null when not known."
    )
    node: str = Field(description="The node it ran on, when known.")
    gpu_utilization: float | None = Field(
        description="Mean compute use of its GPUs, %, for a run that is an array task of its "
        "own; null for runs grouped in one job, which share its GPUs in turn."
    )
    outlier: str = Field(
        description="'slow' (over twice the runs' median time), 'fast' (under half), or ''."
    )
    output_path: str = Field(
        description="Its stdout on the cluster, from your home folder (a grouped run shares "
        "its job's); '' before Slurm has the job."
    )
    output_task: str = Field(
        description="The array task whose output it is: pass it as ?task= to the output "
        "endpoint; '' for the job's own output."
    )

    @staticmethod
    def resolve_values(run: listing.SweepRun) -> dict[str, str]:
        return dict(run.values)

    @staticmethod
    def resolve_output_path(run: listing.SweepRun) -> str:
        return run.output

    @staticmethod
    def resolve_output_task(run: listing.SweepRun) -> str:
        return run.task


class RunsSummaryOut(Schema):
    runs: int = Field(description="How many runs this job runs.")
    completed: int
    failed: int
    running: int
    waiting: int
    unknown: int
    gpu_hours: float | None = Field(
        description="GPU-hours of the runs' own times (times the GPUs each holds)."
    )
    median_seconds: float | None = Field(
        description="The median time of the runs that ended; null under three such runs."
    )
    note: str = Field(description="Why exit codes or times are missing, when they are.")
    read_at: datetime | None = Field(
        description="When the runs' lines (runs.tsv) were last read from the cluster."
    )


def sweep_runs(job: Job, context: dict) -> listing.Runs | None:
    """The job's runs, once per answer; read from the cluster first for their owner (as the
    page does), when due."""
    if not hasattr(job, "_api_runs"):
        if listing.is_sweep(job) and job.owner_id == context["request"].auth.user.pk:
            reading.refresh(job)
        job._api_runs = listing.runs_of(job)
    return job._api_runs


class JobDetailOut(JobOut):
    signal: int | None
    cpus: int | None
    elapsed_seconds: int | None = Field(description="Of an array, its tasks' times added up.")
    time_limit_seconds: int | None = Field(
        description="Of an array, the started tasks' time limits added up."
    )
    longest_task_seconds: int | None = Field(
        description="An array's longest task (the job's own time, alone): what sizes the next "
        "run's time limit."
    )
    task_time_limit_seconds: int | None = Field(
        description="Each task's time limit (the job's own, alone)."
    )
    gpu_hours_used: float | None = Field(description="GPUs x elapsed, so far while it runs.")
    gpu_hours_requested: float | None = Field(description="GPUs x the time limit.")
    gpu_energy_kwh: float | None = Field(
        description="What its GPUs used, kWh (so far while it runs), from NVML's energy "
        "counter; null: unknown (a GPU without the counter, a MIG slice, no samples yet)."
    )
    events: list[EventOut]
    efficiency: EfficiencyOut | None = Field(
        description="Once the job has ended: how well it used what it asked for."
    )
    runs: list[RunOut] | None = Field(
        description="A sweep's runs, by number; null for a job that is not a portal sweep."
    )
    runs_summary: RunsSummaryOut | None = Field(description="What a sweep's runs add up to.")
    rerun_of: int | None = Field(
        description="The sweep whose failed runs this job runs again (its id)."
    )
    reruns: list[int] = Field(description="The jobs that run this sweep's failed runs again.")

    @staticmethod
    def resolve_gpu_hours_used(job: Job) -> float | None:
        return efficiency.usage(job).gpu_hours

    @staticmethod
    def resolve_gpu_hours_requested(job: Job) -> float | None:
        return efficiency.usage(job).gpu_hours_requested

    @staticmethod
    def resolve_gpu_energy_kwh(job: Job) -> float | None:
        return efficiency.usage(job).energy_kwh

    @staticmethod
    def resolve_events(job: Job) -> Any:
        return job.events.all()

    @staticmethod
    def resolve_runs(job: Job, context: dict) -> list[listing.SweepRun] | None:
        found = sweep_runs(job, context)
        return found.runs if found else None

    @staticmethod
    def resolve_runs_summary(job: Job, context: dict) -> dict[str, Any] | None:
        found = sweep_runs(job, context)
        if found is None:
            return None
        return {
            "runs": len(found.runs),
            **{str(outcome): count for outcome, count in found.counts.items()},
            "gpu_hours": found.gpu_hours,
            "median_seconds": found.median_seconds,
            "note": found.note,
            "read_at": found.read_at,
        }

    @staticmethod
    def resolve_rerun_of(job: Job) -> int | None:
        return job.rerun_of_id

    @staticmethod
    def resolve_reruns(job: Job) -> list[int]:
        return list(job.reruns.values_list("pk", flat=True))

    @staticmethod
    def resolve_efficiency(job: Job, context: dict) -> dict[str, Any] | None:
        found = sweep_runs(job, context) if job.is_final else None
        each_run = listing.each_run(job, found) if found else None
        return efficiency_out(efficiency.final_report(job, each_run))


class OutputOut(Schema):
    stream: str = Field(description="out or err.")
    text: str = Field(description="The end of the file; empty before Slurm has the job.")
    cap_bytes: int = Field(description="At most this much of the file's end is sent.")
