"""What the JSON API takes and answers: the job as clients send it, the recommendation as
machines read it, and the one shape of its errors."""

import shlex
from dataclasses import MISSING, fields, replace
from datetime import datetime
from typing import Any

from ninja import Field, Schema
from pydantic import ConfigDict, field_validator
from pydantic_core import PydanticCustomError

from guidance import engine, models
from guidance.engine import history, sweep
from guidance.engine.gpu_hours import GpuHours
from guidance.engine.sources import Source
from guidance.engine.types import CheckpointPlan, Recommendation, Step
from jobs.compose.forms import BUILD_ON_NODE, ENVIRONMENTS, read_sweep

# --- Errors ------------------------------------------------------------------------------


class FieldError(Schema):
    field: str | None = Field(description="The request field at fault; null: the whole request.")
    code: str = Field(description="Stable, for machines: e.g. 'missing', 'unknown_gpu_type'.")
    message: str


class Errors(Schema):
    detail: list[FieldError]


class Message(Schema):
    detail: str


# What any endpoint may answer besides its own: a bad request, no token, a token whose scope
# does not allow the endpoint, and a token over its rate; 422 where the body is checked.
REFUSALS = {400: Message, 401: Message, 403: Message, 429: Message}
CHECKED = REFUSALS | {422: Errors}


# --- The job, as on the advice form ------------------------------------------------------

_JOB_FIELDS = [f.name for f in fields(engine.JobSpec)]
_DEFAULTS = {f.name: f.default for f in fields(engine.JobSpec) if f.default is not MISSING}


class JobIn(Schema):
    """A job on a cluster: what every endpoint that plans a job takes."""

    # A misspelt optional field would otherwise be dropped silently and the plan quietly wrong.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    cluster: str = Field(max_length=50, description="Slug, as GET /api/v1/clusters lists it.")
    workload: engine.Workload
    dataset_gb: float = Field(description="Dataset size in GB.")
    hours: float = Field(description="How long the work takes, in hours.")
    file_count: int = Field(_DEFAULTS["file_count"], description="Files in the data; 0: unknown.")
    data_location: engine.TierKind | None = Field(
        _DEFAULTS["data_location"],
        description="Where the data lives now: home, scratch, project or nearline.",
    )
    gpu_type: str | None = Field(
        _DEFAULTS["gpu_type"], max_length=50, description="Null or absent: recommend one."
    )
    gpu_count: int = _DEFAULTS["gpu_count"]
    gpu_mem_gb: float | None = Field(
        _DEFAULTS["gpu_mem_gb"], description="GPU memory the job needs per GPU, if known."
    )
    checkpointing: bool = Field(
        _DEFAULTS["checkpointing"], description="The program resumes from its latest checkpoint."
    )
    multi_gpu: bool = Field(
        _DEFAULTS["multi_gpu"], description="The program uses several GPUs (e.g. DDP)."
    )
    nodes: int = _DEFAULTS["nodes"]
    expects_full_utilization: bool = Field(
        _DEFAULTS["expects_full_utilization"],
        description="The job keeps the GPU near 100% busy.",
    )
    similar_runs: int = _DEFAULTS["similar_runs"]

    @field_validator("*", mode="before")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        # PostgreSQL cannot hold or even look up text with a NUL (found by tests/test_api_fuzz.py
        # on PostgreSQL, where such a cluster name was a 500); no field has a use for one.
        if isinstance(value, str) and "\x00" in value:
            # The composer's form says the same (Django's ProhibitNullCharactersValidator).
            raise PydanticCustomError("null_characters", "Null characters are not allowed.")
        return value

    @field_validator("gpu_type")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return (value or "").strip() or None

    def job_spec(self) -> engine.JobSpec:
        return engine.JobSpec(**self.model_dump(include=set(_JOB_FIELDS)))


# --- The recommendation, as machines read it ---------------------------------------------


class NoteOut(Schema):
    code: str
    message: str
    source: str | None
    field: str | None


class StepOut(Schema):
    action: str
    command: str
    reason: str
    source: str


class TierOut(Schema):
    name: str
    path: str


class CheckpointsOut(Schema):
    folder: str = Field(
        description="Where the job keeps its checkpoints, as a path starts in jobs: a folder "
        "named by the job (<job name>), the same for every part of a chain, or the results' "
        "checkpoints folder."
    )
    reason: str
    source: str | None


class StorageOut(Schema):
    kind: engine.Placement = Field(description="Where the job reads its data from.")
    archive: bool = Field(description="Pack the many small files into one archive first.")
    data_kind: engine.DataKind = Field(
        description="What the data path is taken to be: a folder is copied, an archive "
        "extracted on the node, a file copied."
    )
    tier: TierOut | None
    reason: str
    source: str
    staging: list[StepOut]
    copy_back: StepOut | None
    cleanup: StepOut | None
    checkpoints: CheckpointsOut


class GpuOut(Schema):
    type: str
    count: int = Field(description="GPUs in all, over every node.")
    memory_gb: float = Field(description="Memory of one GPU of this type.")


class AlternativeOut(Schema):
    partition: str
    why: str = Field(description="Why not this one.")
    source: str | None


class ResourcesOut(Schema):
    nodes: int
    gpus_per_node: int
    tasks_per_node: int
    cpus_per_task: int
    mem: str = Field(description="Memory per node, as Slurm's --mem takes it, e.g. 32000M.")
    time: str = Field(description="Time per job, D-HH:MM:SS.")


class LaunchOut(Schema):
    kind: engine.Launch = Field(description="How the command starts on the nodes.")
    reason: str
    told: bool = Field(description="You chose it; otherwise the command's words told.")


class ChainOut(Schema):
    jobs: int
    array: str = Field(description="For sbatch --array: one job after another.")
    hours_per_job: float
    reason: str
    source: str


class SweepOut(Schema):
    grouping: sweep.Grouping = Field(
        description="array: one array task per run; grouped: short runs share a job (or each "
        "task of an array of jobs), one after another on its GPUs."
    )
    jobs: int = Field(description="Array tasks, or grouped jobs.")
    runs_per_job: int
    minutes_per_job: int = Field(description="Each job's time limit, from the runs it holds.")
    gpu_hours: float = Field(description="The whole sweep's: runs x hours x GPUs per run.")
    runs: int = Field(description="Runs in the sweep.")
    reason: str
    source: str


class ProposedOut(Schema):
    field: str = Field(
        description="The composer's field it sets (time_limit, memory or gpu_count; for a "
        "sweep, hours: each run's duration, from which its plan makes each job's time limit), as "
        "the composer's 'Set by hand' and POST /script take it."
    )
    value: str
    change: str
    reason: str
    source: str | None


class LeftOutRunOut(Schema):
    run: str = Field(description="The run, e.g. 'job 1234' (Slurm's job id).")
    why: str


class FigureOut(Schema):
    what: str
    figure: str = Field(description="The kept runs' lowest to highest, in words.")


class HistoryOut(Schema):
    runs: int = Field(description="The earlier runs the figures and the proposal go by.")
    headline: str = Field(
        description="The figures and the proposal in one line, e.g. 'Last 6 runs: at most "
        "2 h 40 of 24 h, 58 GB of 488 GB, GPUs 31% busy: ask 3 h 30, 73 GB, 3 GPUs'."
    )
    figures: list[FigureOut] = Field(
        description="Elapsed against the limit, peak memory (MaxRSS) against the request, CPU "
        "efficiency, GPU busy % and GPU memory peak."
    )
    left_out: list[LeftOutRunOut] = Field(
        description="Failed, cancelled, still running or much shorter runs: not counted."
    )
    proposal: list[ProposedOut] = Field(
        description=f"Time over the longest run, memory over the peak, the GPUs the runs kept "
        f"busy; empty from fewer than {history.MIN_RUNS} kept runs. Send them back as fields "
        "to apply them; their reasons go into the script's header."
    )


class GpuHoursOut(Schema):
    gpus: int = Field(description="Each job's GPUs, all its nodes.")
    hours: float = Field(description="Each job's time limit.")
    per_job: float = Field(description="GPUs x time limit.")
    parts: int = Field(description="A chain's parts per run; 1 without a chain.")
    jobs: int = Field(description="A sweep's array tasks or grouped jobs; 1 without a sweep.")
    runs: int = Field(description="A sweep's runs; 1 without a sweep.")
    per_run: float
    total: float = Field(description="Every job's GPUs x time limit, added up.")
    words: str


class RecommendationOut(Schema):
    cluster: str
    guidance_only: bool = Field(description="The cluster takes no Slurm scripts (e.g. Run:ai).")
    storage: StorageOut
    partition: str
    gpu: GpuOut
    partition_reason: str
    partition_source: str | None
    alternatives: list[AlternativeOut]
    resources: ResourcesOut
    chain: ChainOut | None = Field(description="Null: one job does all the work.")
    sweep: SweepOut | None = Field(
        description="How a sweep's runs go into jobs (POST /script's sweep_grid, sweep_runs, or "
        "similar_runs over 1). Null: one run."
    )
    launch: LaunchOut
    gpu_hours: GpuHoursOut | None = Field(
        description="The GPU-hours requested: what Slurm reserves for the job, its chain's "
        "parts and its sweep's jobs, if each ran to its time limit. Null where the cluster "
        "takes no Slurm scripts."
    )
    warnings: list[NoteOut]
    errors: list[NoteOut] = Field(description="Always empty here: errors are answered 422.")
    tips: list[NoteOut]
    history: HistoryOut | None = Field(
        default=None,
        description="What your own earlier runs of this job used (the same command on the same "
        "cluster, or the same job name for jobs submitted outside the portal), and the values "
        "they propose. POST /script only: null where you have none, and from POST /recommendation, "
        "which has no command to match.",
    )


def _source(source: Source | None) -> str | None:
    return str(source) if source else None


def _step(step: Step | None) -> dict[str, Any] | None:
    if step is None:
        return None
    return {
        "action": step.action,
        "command": step.command,
        "reason": step.reason,
        "source": _source(step.source),
    }


def _checkpoints(plan: CheckpointPlan | None, results_dir: str) -> dict[str, Any] | None:
    if plan is None:
        return None
    return {
        "folder": plan.folder("<job name>", results_dir.rstrip("/") or "<results directory>"),
        "reason": plan.reason,
        "source": _source(plan.source),
    }


def history_out(found: history.History | None) -> dict[str, Any] | None:
    if found is None:
        return None
    return {
        "runs": len(found.kept),
        "headline": found.headline,
        "figures": [{"what": what, "figure": figure} for what, figure in found.figures()],
        "left_out": [{"run": left.label, "why": left.why} for left in found.left_out],
        "proposal": [
            {
                "field": s.field,
                "value": s.value,
                "change": s.change,
                "reason": s.reason,
                "source": _source(s.source),
            }
            for s in found.proposal
        ],
    }


def _gpu_hours(hours: GpuHours | None) -> dict[str, Any] | None:
    if hours is None:
        return None
    return {
        "gpus": hours.gpus,
        "hours": round(hours.hours, 4),
        "per_job": round(hours.per_job, 2),
        "parts": hours.parts,
        "jobs": hours.jobs,
        "runs": hours.runs,
        "per_run": round(hours.per_run, 2),
        "total": round(hours.total, 2),
        "words": hours.words,
    }


def recommendation_out(rec: Recommendation, found: history.History | None = None) -> dict[str, Any]:
    storage, choice, resources = rec.storage, rec.choice, rec.resources
    # recommend() fills all three whenever it finds no error, and plan_job() lets none through.
    assert storage is not None and choice is not None and resources is not None
    notes = {
        kind: [
            {"code": n.code, "message": n.message, "source": _source(n.source), "field": n.field}
            for n in getattr(rec, kind)
        ]
        for kind in ("warnings", "errors", "tips")
    }
    chain, tier, launch, plan = rec.chain, storage.tier, rec.launch, rec.sweep
    runs = len(rec.spec.sweep.runs) if rec.spec.sweep else 0
    return {
        "cluster": rec.cluster.slug,
        "guidance_only": rec.guidance_only,
        "storage": {
            "kind": storage.placement,
            "archive": storage.archive,
            "data_kind": storage.data_kind,
            "tier": {"name": tier.name, "path": tier.path} if tier else None,
            "reason": storage.reason,
            "source": _source(storage.source),
            "staging": [_step(s) for s in storage.staging],
            "copy_back": _step(storage.copy_back),
            "cleanup": _step(storage.cleanup),
            "checkpoints": _checkpoints(storage.checkpoints, rec.spec.results_dir),
        },
        "partition": choice.partition.name,
        "gpu": {
            "type": choice.gpu_type.name,
            "count": resources.nodes.value * resources.gpus_per_node.value,
            "memory_gb": choice.gpu_type.memory_gb,
        },
        "partition_reason": choice.reason,
        "partition_source": _source(choice.source),
        "alternatives": [
            {"partition": r.partition.name, "why": r.why, "source": _source(r.source)}
            for r in choice.alternatives
        ],
        "resources": {
            "nodes": resources.nodes.value,
            "gpus_per_node": resources.gpus_per_node.value,
            "tasks_per_node": resources.tasks_per_node.value,
            "cpus_per_task": resources.cpus_per_task.value,
            "mem": resources.mem,
            "time": resources.time,
        },
        "chain": (
            {
                "jobs": chain.jobs,
                "array": chain.array,
                "hours_per_job": chain.hours_per_job,
                "reason": chain.reason,
                "source": _source(chain.source),
            }
            if chain
            else None
        ),
        "sweep": (
            {
                "grouping": plan.grouping,
                "jobs": plan.jobs,
                "runs_per_job": plan.runs_per_job,
                "minutes_per_job": plan.minutes_per_job,
                "gpu_hours": plan.gpu_hours,
                "runs": runs,
                "reason": plan.reason,
                "source": _source(plan.source),
            }
            if plan
            else None
        ),
        "launch": {"kind": launch.launch, "reason": launch.reason, "told": launch.told},
        "gpu_hours": _gpu_hours(rec.gpu_hours),
        **notes,
        "history": history_out(found),
    }


class GpuTypeOut(Schema):
    name: str
    memory_gb: float


class ClusterOut(Schema):
    slug: str
    name: str
    scheduler: engine.Scheduler
    guidance_only: bool = Field(description="The cluster takes no Slurm scripts (e.g. Run:ai).")
    gpu_types: list[GpuTypeOut]

    @staticmethod
    def resolve_guidance_only(obj: models.Cluster) -> bool:
        return not obj.takes_scripts


# --- The script ----------------------------------------------------------------------------


class ScriptIn(JobIn):
    """The job, plus what its script needs: the composer's fields, by the same names."""

    job_name: str = Field(max_length=64, description="Letters, digits, '.', '_', '+', '-'.")
    command: str = Field(max_length=10_000, description="Runs through bash -c, quoted.")
    results_dir: str = Field(
        "",
        max_length=1000,
        description="Persistent storage for results (and for checkpoints where the cluster "
        "keeps them with the results: storage.checkpoints says); when left out, the "
        "cluster's published results directory (an error names where the documents keep "
        "results when the cluster publishes none).",
    )
    account: str = Field("", max_length=64)
    data_path: str = Field(
        "",
        max_length=1000,
        description=f"The dataset on shared storage: {engine.DataKind.in_words()}.",
    )
    data_kind: engine.DataKind | None = Field(
        None,
        description=f"What the data path is: {' | '.join(engine.DataKind)}, as data_path "
        "describes them; when left out, taken from the path's name.",
    )
    modules: list[str] = Field([], description="Modules to load, e.g. ['python/3.11', 'cuda'].")
    environment: str = Field(
        "none", description="; ".join(f"{value}: {label}" for value, label in ENVIRONMENTS)
    )
    environment_path: str = Field("", max_length=1000)
    launch: engine.Launch | None = Field(
        None,
        description="How the command starts: "
        + "; ".join(f"{k.value}: {k.label}" for k in engine.Launch)
        + ". When left out, told from the command.",
    )
    mail_user: str = Field("", max_length=254, description="E-mail on end or failure.")
    # Set by hand instead of the recommendation, as in the composer.
    partition: str = Field(
        "", max_length=50, description="A node type of the cluster; empty: recommend one."
    )
    time_limit: str = Field(
        "", max_length=20, description="Each job's, as Slurm writes it (12:00:00, 1-12:00:00)."
    )
    memory: str = Field("", max_length=20, description="Per node, e.g. 64G or 64000M.")
    cpus_per_task: int | None = Field(None, description="Null: recommended.")
    # A sweep: many runs of the command, each with its own values and folders.
    sweep_grid: dict[str, list[str]] | None = Field(
        None,
        description="A sweep over every combination: each parameter's name with its values, as "
        'text, e.g. {"lr": ["0.1", "0.01"], "seed": ["1", "2"]} (4 runs). Write '
        "{lr} in the command where the value goes, {{ and }} for a literal brace; each run "
        "also has its values as variables ($lr), $RUN_NUMBER and $RUN_NAME, and its own "
        f"folder under results_dir. At most {sweep.MAX_RUNS} runs.",
    )
    sweep_runs: list[dict[str, str]] | None = Field(
        None,
        max_length=sweep.MAX_RUNS,
        description="Instead of a grid, the runs one by one: one object per run, each with the "
        'same parameters, e.g. [{"lr": "0.1", "seed": "1"}, {"lr": "0.01", '
        '"seed": "7"}].',
    )
    runs_at_once: int | None = Field(
        None,
        ge=1,
        le=1000,
        description="In a sweep, at most this many of its jobs at once (sbatch --array's %N); "
        "null: as many as the queue starts.",
    )

    @field_validator("sweep_grid")
    @classmethod
    def _grid(cls, grid: dict[str, list[str]] | None) -> dict[str, list[str]] | None:
        if grid is not None:
            _sweep_error(lambda: sweep.from_grid(grid, ""))
            _no_trailing_comma(grid.items())
        return grid

    @field_validator("sweep_runs")
    @classmethod
    def _runs(cls, runs: list[dict[str, str]] | None) -> list[dict[str, str]] | None:
        # Each run's names and values checked as the engine checks a grid's; that every run
        # names the same parameters, the composer's reading of the lines says (job_spec).
        for run in runs or ():
            _sweep_error(lambda run=run: sweep.from_grid({k: [v] for k, v in run.items()}, ""))
            _no_trailing_comma((name, [value]) for name, value in run.items())
        return runs

    @property
    def sets_by_hand(self) -> bool:
        return bool(self.partition or self.time_limit or self.memory or self.cpus_per_task)

    def job_spec(self) -> engine.JobSpec:
        """Raises SweepError naming the field at fault, as the composer's form would."""
        data = self.form_data()
        runs = read_sweep(
            data.get("sweep_grid", ""), data.get("sweep_runs", ""), self.similar_runs, self.command
        )
        return replace(
            super().job_spec(),
            builds_environment=self.environment == BUILD_ON_NODE,
            command=self.command,
            launch=self.launch,
            results_dir=self.results_dir,
            sweep=runs,
            similar_runs=len(runs.runs) if runs else self.similar_runs,
            runs_at_once=self.runs_at_once or 0,
        )

    @field_validator("data_path")
    @classmethod
    def _stripped(cls, value: str) -> str:
        # As the composer's form strips it: the engine plans the very job the script is for.
        return value.strip()

    def form_data(self) -> dict[str, str]:
        """The fields as the composer's form posts them: a sweep's as the text it reads, each
        value quoted as a shell word so that spaces and quotes come through as they are."""
        fields = self.model_dump()
        data = {}
        grid, runs = fields.pop("sweep_grid"), fields.pop("sweep_runs")
        if grid:
            data["sweep_grid"] = "\n".join(
                f"{name} = {' '.join(sweep.grid_word(v) for v in values)}"
                for name, values in grid.items()
            )
        if runs:
            data["sweep_runs"] = "\n".join(
                " ".join(f"{name}={shlex.quote(value)}" for name, value in run.items())
                for run in runs
            )
        for name, value in fields.items():
            if isinstance(value, bool):
                if value:
                    data[name] = "on"
            elif isinstance(value, list):
                data[name] = " ".join(value)
            elif value is not None:
                data[name] = str(value)
        return data


def _sweep_error(check) -> None:
    try:
        check()
    except sweep.SweepError as error:
        # Through the context: a message may hold braces, which the template would read.
        raise PydanticCustomError("invalid_sweep", "{message}", {"message": str(error)}) from None


def _no_trailing_comma(pairs) -> None:
    for name, values in pairs:
        for value in values:
            if value.endswith(","):
                raise PydanticCustomError(
                    "invalid_sweep",
                    "{message}",
                    {
                        "message": f"{name}'s value {value!r} ends with a comma, which the "
                        "composer reads as a separator between values: leave the comma out."
                    },
                )


class ScriptOut(Schema):
    filename: str
    script: str
    salloc: str = Field(description="The interactive allocation to try the job first.")
    recommendation: RecommendationOut


class GpuCountOut(Schema):
    partition: str
    gpu_type: str = Field(description="'' where the site does not type its GPUs.")
    total: int
    allocated: int
    unavailable: int = Field(description="On nodes that take no jobs: down, drained or reserved.")
    free: int
    pending: int = Field(description="GPUs asked for by the jobs waiting for this node type.")


class ClusterGpusOut(Schema):
    cluster: str
    read_at: datetime | None = Field(description="When the poller last read the cluster.")
    error: str = Field(description="Why the last read failed, if it did; the rows are older.")
    gpus: list[GpuCountOut]


class PlaceOut(Schema):
    """One of the user's logins in "where should this run?"."""

    cluster: str = Field(description="The cluster's slug.")
    cluster_name: str
    login: str = Field(description="Your Unix user there.")
    fits: bool = Field(description="Whether the job fits the cluster's published limits.")
    why_not: list[str] = Field(description="What stops it there, as the composer says it.")
    partition: str = Field(
        description="The node type the advice picks there; '' if it does not fit."
    )
    gpu_type: str
    gpu_hours: float | None = Field(description="What the job asks for in all there.")
    start: datetime | None = Field(
        description="When Slurm predicts it would start (sbatch --test-only); null: unknown."
    )
    start_problem: str = Field(
        description="Why the start is unknown: no answer in time, a refusal."
    )
    free_gpus: int | None = Field(
        description="GPUs of that node type and GPU type free at the last read; null: never read."
    )
    changes: list[str] = Field(
        description="What composing it there changes: fields of this cluster's that do not carry."
    )


class WhereOut(Schema):
    ranking: list[PlaceOut] = Field(
        description="Fits first, then the soonest predicted start (unknown last), then GPU-hours."
    )


def place_out(place) -> dict[str, Any]:
    return {
        "cluster": place.cluster.slug,
        "cluster_name": place.cluster.name,
        "login": place.account.username,
        "fits": place.fits,
        "why_not": list(place.why_not),
        "partition": place.partition,
        "gpu_type": place.gpu_type,
        "gpu_hours": place.gpu_hours.total if place.gpu_hours else None,
        "start": place.start,
        "start_problem": place.estimate.problem,
        "free_gpus": place.free_gpus,
        "changes": list(place.changes),
    }
