"""The JSON API for scripts and command-line users, mounted at /api/v1/.

Every endpoint wants `Authorization: Bearer <token>` (tokens from /settings/tokens/ or
`manage.py create_api_token`) and reads no session cookie, so none needs a CSRF token. The schema
is at /api/v1/openapi.json. Bad input is always answered 422 in one shape,
`{"detail": [{"field", "code", "message"}]}`, whether the schema or the engine found it.

A new endpoint that plans a job takes `JobIn` and calls `plan_job()`, which raises `InvalidInput`
(answered 422) rather than return a plan for a job that cannot run.
"""

from dataclasses import MISSING, fields
from typing import Any

from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from ninja import Field, NinjaAPI, Schema
from ninja.errors import AuthenticationError, ValidationError
from ninja.security import HttpBearer
from pydantic import ConfigDict, field_validator

from guidance import engine, models
from guidance.engine.sources import Source
from guidance.engine.types import Recommendation, Step
from guidance.facts import cluster_facts
from jobs.compose.forms import ComposeForm
from jobs.compose.from_form import compose
from portal.models import ApiToken


class BearerToken(HttpBearer):
    def __call__(self, request: HttpRequest) -> ApiToken | None:
        # Replaces HttpBearer's, which in DEBUG logs a header it cannot read: token and all.
        scheme, _, secret = request.headers.get(self.header, "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        return self.authenticate(request, secret.strip())

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        api_token = ApiToken.find(token)
        if api_token is not None:
            api_token.mark_used()
        return api_token


api = NinjaAPI(
    title="GPU portal API",
    version="1",
    description=(
        "Advice on storage, GPUs and Slurm resources for a job, as on the portal's advice pages. "
        "Send `Authorization: Bearer <token>`; create a token under API tokens in the portal."
    ),
    urls_namespace="api",
    auth=BearerToken(),
    # Swagger UI would load from a CDN (or needs "ninja" in INSTALLED_APPS to be served here);
    # the portal and its users may have no internet access. The schema is what clients need.
    docs_url=None,
)


# --- Errors ------------------------------------------------------------------------------


class FieldError(Schema):
    field: str | None = Field(description="The request field at fault; null: the whole request.")
    code: str = Field(description="Stable, for machines: e.g. 'missing', 'unknown_gpu_type'.")
    message: str


class Errors(Schema):
    detail: list[FieldError]


class Message(Schema):
    detail: str


class InvalidInput(Exception):
    """Input that passed the schema but cannot be planned; answered like a schema error."""

    def __init__(self, errors: list[FieldError]) -> None:
        super().__init__(errors)
        self.errors = errors


def _unprocessable(request: HttpRequest, errors: list[FieldError]) -> HttpResponse:
    return api.create_response(request, Errors(detail=errors).model_dump(), status=422)


def _field_name(loc: tuple | list) -> str | None:
    source, *path = loc or ("",)
    if source == "body":
        # The view's argument name comes first: the client sent its fields, not that name.
        path = path[1:]
    return ".".join(str(part) for part in path) or None


@api.exception_handler(ValidationError)
def _schema_errors(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    errors = [
        FieldError(
            field=_field_name(e.get("loc", ())),
            code=e.get("type", "invalid"),
            message=e.get("msg", "Invalid value."),
        )
        for e in exc.errors
    ]
    return _unprocessable(request, errors)


@api.exception_handler(InvalidInput)
def _invalid_input(request: HttpRequest, exc: InvalidInput) -> HttpResponse:
    return _unprocessable(request, exc.errors)


@api.exception_handler(AuthenticationError)
def _unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = api.create_response(
        request,
        {
            "detail": "Missing, unknown or revoked API token. Send the header "
            "'Authorization: Bearer <token>' with a token from the portal's API tokens page."
        },
        status=401,
    )
    response["WWW-Authenticate"] = 'Bearer realm="GPU portal API"'
    return response


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

    @field_validator("gpu_type")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return (value or "").strip() or None

    def job_spec(self) -> engine.JobSpec:
        return engine.JobSpec(**self.model_dump(include=set(_JOB_FIELDS)))


def _cluster(slug: str) -> models.Cluster | None:
    queryset = models.Cluster.objects.select_related("policy").prefetch_related(
        Prefetch("partitions", models.Partition.objects.select_related("gpu_type")),
        "gpu_types",
        "storage_tiers",
    )
    return queryset.filter(slug=slug).first()


def plan_job(job: JobIn) -> Recommendation:
    """The engine's advice for the job; InvalidInput naming each field at fault if it has none."""
    cluster = _cluster(job.cluster)
    if cluster is None:
        known = ", ".join(models.Cluster.objects.values_list("slug", flat=True))
        raise InvalidInput(
            [
                FieldError(
                    field="cluster",
                    code="unknown_cluster",
                    message=f"No cluster '{job.cluster}'. Known clusters: {known}.",
                )
            ]
        )
    rec = engine.recommend(job.job_spec(), cluster_facts(cluster))
    if rec.errors:
        raise InvalidInput(
            [FieldError(field=e.field, code=e.code, message=e.message) for e in rec.errors]
        )
    return rec


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


class ChainOut(Schema):
    jobs: int
    array: str = Field(description="For sbatch --array: one job after another.")
    hours_per_job: float
    reason: str
    source: str


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
    warnings: list[NoteOut]
    errors: list[NoteOut] = Field(description="Always empty here: errors are answered 422.")
    tips: list[NoteOut]


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


def recommendation_out(rec: Recommendation) -> dict[str, Any]:
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
    chain, tier = rec.chain, storage.tier
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
        **notes,
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


# --- Endpoints ---------------------------------------------------------------------------


@api.post(
    "/recommendation",
    response={200: RecommendationOut, 401: Message, 422: Errors},
    url_name="recommendation",
    operation_id="recommendation",
    summary="Advice for a job: storage, partition, GPUs, Slurm resources, checkpoint chain",
)
def recommendation(request: HttpRequest, job: JobIn) -> dict[str, Any]:
    return recommendation_out(plan_job(job))


@api.get(
    "/clusters",
    response={200: list[ClusterOut], 401: Message},
    url_name="clusters",
    operation_id="clusters",
    summary="The clusters and their GPU types",
)
def clusters(request: HttpRequest) -> Any:
    return models.Cluster.objects.prefetch_related("gpu_types")


# --- The script ----------------------------------------------------------------------------


class ScriptIn(JobIn):
    """The job, plus what its script needs: the composer's fields, by the same names."""

    job_name: str = Field(max_length=64, description="Letters, digits, '.', '_', '+', '-'.")
    command: str = Field(max_length=10_000, description="Runs through bash -c, quoted.")
    results_dir: str = Field(max_length=1000, description="Persistent storage for results.")
    account: str = Field("", max_length=64)
    data_path: str = Field("", max_length=1000, description="The dataset on shared storage.")
    data_kind: engine.DataKind | None = Field(
        None, description="folder, archive or file; when left out, taken from the path's name."
    )
    modules: list[str] = Field([], description="Modules to load, e.g. ['python/3.11', 'cuda'].")
    environment: str = Field("none", description="none, venv or requirements.")
    environment_path: str = Field("", max_length=1000)
    mail_user: str = Field("", max_length=254, description="E-mail on end or failure.")


class ScriptOut(Schema):
    filename: str
    script: str
    salloc: str = Field(description="The interactive allocation to try the job first.")
    recommendation: RecommendationOut


def _form_data(job: ScriptIn) -> dict[str, str]:
    data = {}
    for name, value in job.model_dump().items():
        if isinstance(value, bool):
            if value:
                data[name] = "on"
        elif isinstance(value, list):
            data[name] = " ".join(value)
        elif value is not None:
            data[name] = str(value)
    return data


@api.post(
    "/script",
    response={200: ScriptOut, 401: Message, 422: Errors},
    url_name="script",
    operation_id="script",
    summary="The sbatch script for a job, with the advice it follows",
)
def script(request: HttpRequest, job: ScriptIn) -> dict[str, Any]:
    # One set of rules for the page and the API: the composer's form validates and composes.
    plan_job(job)  # unknown cluster and the engine's objections, named by field
    form = ComposeForm(_form_data(job))
    composed = compose(form)
    if composed is None:
        raise InvalidInput(
            [
                FieldError(
                    field=None if name == "__all__" else name,
                    code=e.code or "invalid",
                    message=" ".join(e.messages),
                )
                for name, errors in form.errors.as_data().items()
                for e in errors
            ]
        )
    if not composed.script:
        raise InvalidInput(
            [
                FieldError(
                    field="cluster",
                    code="guidance_only",
                    message=f"{composed.recommendation.cluster.name} is not scheduled by Slurm: "
                    "the portal gives advice for it but writes no script.",
                )
            ]
        )
    return {
        "filename": f"{job.job_name}.sbatch",
        "script": composed.script,
        "salloc": composed.salloc,
        "recommendation": recommendation_out(composed.recommendation),
    }
