"""The JSON API for scripts and command-line users, mounted at /api/v1/.

Every endpoint wants `Authorization: Bearer <token>` (tokens from /settings/tokens/ or
`manage.py create_api_token`) and reads no session cookie, so none needs a CSRF token. The schema
is at /api/v1/openapi.json. Bad input is always answered 422 in one shape,
`{"detail": [{"field", "code", "message"}]}`, whether the schema or the engine found it; a body
that is not JSON at all is 400, and a token over API_RATE_LIMIT 429 with Retry-After.

A new endpoint that plans a job takes `JobIn` and calls `plan_job()` (portal/api_planning.py),
which raises `InvalidInput` (answered 422) rather than return a plan for a job that cannot run.
What the endpoints take and answer is in portal/api_schemas.py; the jobs' endpoints (submit,
list, show, cancel, output) are portal/api_jobs.py's, mounted at /api/v1/jobs, and the script
checker is portal/api_check.py's, at /api/v1/check; the training-code checker is
portal/api_check_code.py's, at /api/v1/check-code.
"""

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, Throttled, ValidationError
from ninja.throttling import SimpleRateThrottle

from guidance import models
from jobs.cluster.free_gpus_views import cluster_gpus
from jobs.compose import where
from jobs.compose.forms import ComposeForm
from jobs.models import Via
from jobs.plans import actions
from portal import api_check, api_check_code, api_jobs, api_plans
from portal.api_auth import COMPOSE, READ, SUBMIT, OutOfScope
from portal.api_planning import InvalidInput, composed_script, plan_job
from portal.api_schemas import (
    CHECKED,
    REFUSALS,
    ClusterGpusOut,
    ClusterOut,
    Errors,
    FieldError,
    JobIn,
    Message,
    RecommendationOut,
    ScriptIn,
    ScriptOut,
    WhereOut,
    place_out,
    recommendation_out,
)
from portal.models import Scope


class PerToken(SimpleRateThrottle):
    """API_RATE_LIMIT requests per token (e.g. 120/min), as the settings say when the request
    comes. Kept in Django's cache: per process unless CACHE_URL names a shared one (Redis).
    Requests without a valid token are answered 401 before this is asked."""

    def __init__(self) -> None:
        super().__init__(settings.API_RATE_LIMIT)

    def allow_request(self, request: HttpRequest) -> bool:
        self.num_requests, self.duration = self.parse_rate(settings.API_RATE_LIMIT)
        return super().allow_request(request)

    def get_cache_key(self, request: HttpRequest) -> str:
        return self.cache_format % {"scope": "api-token", "ident": request.auth.pk}


api = NinjaAPI(
    title="GPU portal API",
    version="1",
    description=(
        "Advice on storage, GPUs and Slurm resources for a job, as on the portal's advice pages. "
        "Send `Authorization: Bearer <token>`; create a token under API tokens in the portal."
    ),
    urls_namespace="api",
    auth=SUBMIT,
    # Ninja answers 429 with Retry-After (whole seconds) once a token is over its rate.
    throttle=PerToken(),
    # Swagger UI, from the portal's own static files ("ninja" in INSTALLED_APPS): no CDN, since
    # the portal and its users may have no internet access.
    docs_url="/docs",
)


# --- Errors ------------------------------------------------------------------------------


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


@api.exception_handler(RequestDataTooBig)
def _too_large(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    # Django refuses the body before the schema sees it; say so in the API's shape, not as
    # Django's HTML 400.
    limit_mib = settings.DATA_UPLOAD_MAX_MEMORY_SIZE / 2**20
    said = f"The request body is over the portal's limit of {limit_mib:g} MiB: send less."
    return api.create_response(request, {"detail": said}, status=413)


@api.exception_handler(InvalidInput)
def _invalid_input(request: HttpRequest, exc: InvalidInput) -> HttpResponse:
    return _unprocessable(request, exc.errors)


@api.exception_handler(api_jobs.JobNotFound)
def _not_found(request: HttpRequest, exc: api_jobs.JobNotFound) -> HttpResponse:
    # Someone else's job is answered as one that does not exist.
    return api.create_response(request, {"detail": f"You have no job {exc.job_id}."}, status=404)


@api.exception_handler(api_jobs.NotYours)
def _not_yours(request: HttpRequest, exc: api_jobs.NotYours) -> HttpResponse:
    return api.create_response(request, {"detail": exc.message}, status=403)


@api.exception_handler(api_jobs.ClusterUnavailable)
def _cluster_unavailable(request: HttpRequest, exc: api_jobs.ClusterUnavailable) -> HttpResponse:
    error = exc.error
    status = 503 if error.retryable else 502
    response = api.create_response(request, {"detail": error.message}, status=status)
    if error.retryable:
        response["Retry-After"] = str(api_jobs.RETRY_AFTER_SECONDS)
    return response


@api.exception_handler(Throttled)
def _throttled(request: HttpRequest, exc: Throttled) -> HttpResponse:
    return api.create_response(request, {"detail": over_rate()}, status=429)


def over_rate() -> str:
    rate = settings.API_RATE_LIMIT
    return f"This token is over its rate of {rate} requests: wait as Retry-After says."


@api.exception_handler(OutOfScope)
def _out_of_scope(request: HttpRequest, exc: OutOfScope) -> HttpResponse:
    client = request.headers.get("User-Agent", "")
    what = f"{request.method} {request.path}"
    actions.refused(exc.token, Via.API, client, what, Scope(exc.needed).value)
    return api.create_response(request, {"detail": out_of_scope(exc)}, status=403)


def out_of_scope(exc: OutOfScope) -> str:
    """Why the token may not do this, in words (the API's 403, the MCP tools' errors)."""
    return (
        f"The token “{exc.token.name}” {_MAY[Scope(exc.token.scope)]}: this needs a token that "
        f"{_NEEDS[exc.needed]}. Its owner can make one on the portal's API tokens page."
    )


_MAY = {
    Scope.READ: "is read-only",
    Scope.COMPOSE: "may compose and check, not submit or cancel",
    Scope.SUBMIT: "may submit and cancel",
}
_NEEDS = {
    Scope.READ: "may read",
    Scope.COMPOSE: "may compose and check",
    Scope.SUBMIT: "may submit and cancel jobs",
}


@api.exception_handler(AuthenticationError)
def _unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = api.create_response(request, {"detail": UNAUTHENTICATED}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="GPU portal API"'
    return response


UNAUTHENTICATED = (
    "Missing, unknown or revoked API token. Send the header "
    "'Authorization: Bearer <token>' with a token from the portal's API tokens page."
)


# --- Endpoints ---------------------------------------------------------------------------


@api.post(
    "/recommendation",
    response={200: RecommendationOut} | CHECKED,
    url_name="recommendation",
    auth=COMPOSE,
    operation_id="recommendation",
    summary="Advice for a job: storage, partition, GPUs, Slurm resources, checkpoint chain",
)
def recommendation(request: HttpRequest, job: JobIn) -> dict[str, Any]:
    return recommendation_out(plan_job(job))


@api.get(
    "/clusters",
    response={200: list[ClusterOut]} | REFUSALS,
    url_name="clusters",
    auth=READ,
    operation_id="clusters",
    summary="The clusters and their GPU types",
)
def clusters(request: HttpRequest) -> Any:
    return models.Cluster.objects.prefetch_related("gpu_types")


@api.get(
    "/clusters/{slug}/gpus",
    response={200: ClusterGpusOut, 404: Message} | REFUSALS,
    url_name="cluster_gpus",
    auth=READ,
    operation_id="cluster_gpus",
    summary="The GPUs free now per node type and GPU type, as the poller last read them",
)
def free_gpus(request: HttpRequest, slug: str) -> Any:
    cluster = models.Cluster.objects.filter(slug=slug).first()
    if cluster is None:
        return 404, {"detail": f"There is no cluster {slug!r}."}
    read = cluster_gpus(cluster)
    return {
        "cluster": slug,
        "read_at": read["read_at"],
        "error": read["error"],
        "gpus": read["rows"],
    }


@api.post(
    "/script",
    response={200: ScriptOut} | CHECKED,
    url_name="script",
    auth=COMPOSE,
    operation_id="script",
    summary="The sbatch script for a job, with the advice it follows",
)
def script(request: HttpRequest, job: ScriptIn) -> dict[str, Any]:
    # One set of rules for the page and the API: the composer's form writes the script.
    composed = composed_script(job, ComposeForm(job.form_data()), request.auth.user)
    return {
        "filename": f"{job.job_name}.sbatch",
        "script": composed.script,
        "salloc": composed.salloc,
        "recommendation": recommendation_out(composed.recommendation, composed.history),
    }


@api.post(
    "/where",
    response={200: WhereOut} | CHECKED,
    url_name="where",
    auth=COMPOSE,
    operation_id="where",
    summary="Where should this job run: your logins ranked for it",
    description="The job planned for each of your own logins: whether it fits the cluster's "
    "limits (and why not), the node type and GPU type picked there, its GPU-hours, the start "
    "Slurm predicts (asked of every login at once; one that does not answer within "
    "SOONER_BUDGET_SECONDS is unknown) and the GPUs free now. Nothing is submitted.",
)
def where_to_run(request: HttpRequest, job: ScriptIn) -> dict[str, Any]:
    ranked = where.rank(request.auth.user, job.form_data())
    return {"ranking": [place_out(place) for place in ranked]}


api.add_router("/jobs", api_jobs.router)
api.add_router("/check", api_check.router)
api.add_router("/check-code", api_check_code.router)
api.add_router("/plans", api_plans.router)
