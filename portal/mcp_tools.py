"""The MCP server's tools and resources (served at /mcp by portal/mcp_endpoint.py).

Each tool is the REST endpoint it names, called with the same schema and the same function: the
arguments are the endpoint's fields, validated by its schema (limits, NUL, names), refused in its
words; the token needs the endpoint's scope. Nothing here reaches Slurm but what the REST API
reaches: `sbatch --test-only` while planning, and `scancel` for a submit-scope token. A plan is
submitted only by the user's word: said in the agent's client when it can ask them (MCP
elicitation) and the token may submit, or else on the portal's page for the plan."""

import inspect
import json
import logging
from collections.abc import Callable
from contextvars import ContextVar
from typing import Annotated, Any
from uuid import UUID

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpRequest
from django.utils.crypto import salted_hmac
from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    RequestStateSecurity,
    Resolve,
)
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field, ValidationError

from guidance import models as guidance
from guidance.citations import as_source, cite, known_documents
from jobs.models import Plan, Via
from jobs.plans import actions, deciding
from jobs.plans.making import PlanRefused
from portal import api, api_check, api_check_code, api_jobs, api_plans
from portal.api_auth import OutOfScope
from portal.api_job_schemas import Filters, JobDetailOut, JobOut
from portal.api_planning import InvalidInput
from portal.api_schemas import ClusterOut, FieldError, JobIn, RecommendationOut, ScriptIn, WhereOut
from portal.models import ApiToken, Scope

# The request a tool answers, its token in request.auth: set by the view for this exchange.
current_request: ContextVar[HttpRequest] = ContextVar("mcp_request")


def _token_of(ctx: Any) -> str | None:
    # A question asked through the client (elicitation) comes back sealed with this: an answer
    # given under one token is no answer under another.
    request = current_request.get(None)
    return None if request is None else f"token:{request.auth.pk}"


server = MCPServer(
    "gpu-portal",
    instructions=(
        "The GPU portal of this site: its clusters' published guidance, advice for a job, "
        "scripts composed and checked against it, start estimates, and the user's jobs. A job "
        "is submitted only by a plan the user confirms: make one (plan_composition or "
        "plan_script), then ask with submit; the user says yes in this client when it can ask, "
        "or on the plan's confirm_url."
    ),
    # Keys derived from SECRET_KEY, so that every process of the portal can open what another
    # sealed (the question asked in one request, answered in the next).
    request_state_security=RequestStateSecurity(
        keys=[salted_hmac("portal.mcp.request-state", "keys", algorithm="sha256").digest()],
        bind_principal=_token_of,
        ttl=settings.PLAN_MINUTES * 60,
    ),
)

# The schema each tool's arguments are validated by, before the SDK sees them (the REST
# endpoint's), and the scope its token needs (the endpoint's).
_SCHEMAS: dict[str, type[BaseModel]] = {}
_NEEDS: dict[str, Scope] = {}


# --- Errors in the API's words ------------------------------------------------------------


def _said(errors: list[FieldError]) -> str:
    return "\n".join(
        f"{e.field}: {e.message} ({e.code})" if e.field else f"{e.message} ({e.code})"
        for e in errors
    )


def _schema_errors(error: ValidationError) -> list[FieldError]:
    return [
        FieldError(
            field=".".join(str(part) for part in e.get("loc", ())) or None,
            code=e.get("type", "invalid"),
            message=e.get("msg", "Invalid value."),
        )
        for e in error.errors()
    ]


async def _validate_first(ctx: Any, call_next: Any) -> Any:
    """A tool's call checked as the API checks a request, before anything else reads it: the
    token's scope first (the API's 403), then the arguments by the endpoint's schema (its 422),
    each refused in the API's words as a tool error."""
    if ctx.method == "tools/call" and isinstance(ctx.params, dict):
        name = ctx.params.get("name", "")
        if name in _NEEDS:
            token: ApiToken = current_request.get().auth
            if not token.allows(_NEEDS[name]):
                client = current_request.get().headers.get("User-Agent", "")
                tried = f"the tool {name}"
                await sync_to_async(actions.refused)(
                    token, Via.MCP, client, tried, _NEEDS[name].value
                )
                return _refusal(api.out_of_scope(OutOfScope(token, _NEEDS[name])))
        if (schema := _SCHEMAS.get(name)) is not None:
            try:
                schema.model_validate(ctx.params.get("arguments") or {})
            except ValidationError as error:
                return _refusal(_said(_schema_errors(error)))
    return await call_next(ctx)


def _refusal(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


server.middleware.append(_validate_first)
# The SDK's session manager says at INFO when it starts and stops: here once per request.
logging.getLogger("mcp.server.streamable_http_manager").setLevel(logging.WARNING)


def _answered(work: Callable[..., Any], *args: Any) -> Any:
    """The work's answer as JSON values, or a ToolError in the API's words."""
    try:
        return json.loads(json.dumps(work(*args), cls=DjangoJSONEncoder))
    except InvalidInput as invalid:
        raise ToolError(_said(invalid.errors)) from None
    except ValidationError as error:
        raise ToolError(_said(_schema_errors(error))) from None
    except PlanRefused as refused:
        raise ToolError(refused.message) from None
    except api_jobs.JobNotFound as missing:
        raise ToolError(f"You have no job {missing.job_id}.") from None
    except (api_jobs.NotYours, api_jobs.ClusterUnavailable) as refused:
        raise ToolError(str(refused)) from None
    except OutOfScope as refused:
        raise ToolError(api.out_of_scope(refused)) from None


def _out(schema: type[BaseModel], answer: Any) -> dict[str, Any]:
    """The answer as the REST endpoint's response schema writes it."""
    return schema.model_validate(answer).model_dump(mode="json")


def _plan_out(request: HttpRequest, plan: Plan) -> dict[str, Any]:
    return _out(api_plans.PlanOut, api_plans.plan_out(request, plan))


def _client(ctx: Context) -> str:
    """The client's name for itself: its MCP clientInfo, else its User-Agent."""
    params = ctx.session.client_params
    if params is not None and params.client_info is not None:
        info = params.client_info
        return f"{info.name} {info.version}".strip()
    return current_request.get().headers.get("User-Agent", "")


def _made_by(ctx: Context) -> dict[str, Any]:
    return {"via": Via.MCP, "token": current_request.get().auth, "client": _client(ctx)[:100]}


def _allowed(needed: Scope) -> HttpRequest:
    request = current_request.get()
    token: ApiToken = request.auth
    if not token.allows(needed):
        raise ToolError(api.out_of_scope(OutOfScope(token, needed)))
    return request


def _signature(schema: type[BaseModel] | None) -> inspect.Signature:
    """The REST schema's fields as keyword arguments, limits and descriptions kept, so that
    the tool's input schema says what the endpoint takes."""
    parameters = [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
    for name, field in (schema.model_fields if schema else {}).items():
        annotation = Annotated[
            (field.annotation, *field.metadata, Field(description=field.description))
        ]  # type: ignore[misc]
        default = (
            inspect.Parameter.empty
            if field.is_required()
            else field.get_default(call_default_factory=True)
        )
        parameters.append(
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
            )
        )
    return inspect.Signature(parameters)


def _tool(name: str, schema: type[BaseModel] | None, needed: Scope, description: str):
    """Registers `work(request, ctx, body)`, run in the request's thread, as the tool `name`."""

    def register(work: Callable[..., Any]) -> Callable[..., Any]:
        async def run(ctx: Context, **arguments: Any) -> Any:
            request = _allowed(needed)
            body = schema.model_validate(arguments) if schema else None
            return await sync_to_async(_answered)(work, request, ctx, body)

        run.__signature__ = _signature(schema)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in run.__signature__.parameters.values()}  # type: ignore[attr-defined]
        server.add_tool(run, name=name, description=description, structured_output=False)
        _NEEDS[name] = needed
        if schema is not None:
            _SCHEMAS[name] = schema
        return work

    return register


class PlanIdIn(BaseModel):
    plan_id: UUID = Field(description="The plan's id, as plan_composition or plan_script gave it.")


class JobIdIn(BaseModel):
    job_id: int = Field(ge=1, le=2**63 - 1, description="The job's id in the portal.")


# --- Reading -------------------------------------------------------------------------------


@_tool(
    "clusters",
    None,
    Scope.READ,
    "The site's clusters: their GPU types, whether they take Slurm scripts, and the page and "
    "resource (cluster://<slug>) with their published facts and guidance.",
)
def _clusters(request: HttpRequest, ctx: Context, body: None) -> dict[str, Any]:
    return {
        "clusters": [
            ClusterOut.model_validate(cluster).model_dump(mode="json")
            | {
                "page": request.build_absolute_uri(cluster.get_absolute_url()),
                "resource": f"cluster://{cluster.slug}",
            }
            for cluster in api.clusters(request)
        ]
    }


@_tool(
    "jobs",
    Filters,
    Scope.READ,
    "Your jobs, newest first (at most 25): state and the reason in words, start estimate, "
    "GPU-hours. The other jobs of a login you share are listed with mine: false.",
)
def _jobs(request: HttpRequest, ctx: Context, body: Filters) -> dict[str, Any]:
    found = api_jobs.jobs_of(request.auth.user, body)[: api_jobs.PAGE_SIZE]
    context = {"request": request}
    return {
        "jobs": [
            JobOut.model_validate(job, context=context).model_dump(mode="json") for job in found
        ]
    }


@_tool(
    "job",
    JobIdIn,
    Scope.READ,
    "One job: its state and why in words, its wait and start estimate, GPU use and efficiency, "
    "events, and the end of its output (your own jobs).",
)
def _job(request: HttpRequest, ctx: Context, body: JobIdIn) -> dict[str, Any]:
    found = api_jobs.job(request, body.job_id)  # as GET /jobs/{id}: polled while followed
    shown = JobDetailOut.model_validate(found, context={"request": request}).model_dump(mode="json")
    if found.owner_id == request.auth.user.pk and found.slurm_id:
        try:
            shown["output_tail"] = api_jobs.job_output(request, found.pk)["text"]
        except api_jobs.ClusterUnavailable as error:
            shown["output_tail"] = f"(not read: {error})"
    return shown


# --- Composing and checking ----------------------------------------------------------------


@_tool(
    "recommend",
    JobIn,
    Scope.COMPOSE,
    "Advice for a job on a cluster: storage, partition, GPUs, Slurm resources, checkpoints, "
    "each with its source in the site's guidance (as POST /api/v1/recommendation).",
)
def _recommend(request: HttpRequest, ctx: Context, body: JobIn) -> dict[str, Any]:
    return _out(RecommendationOut, api.recommendation(request, body))


@_tool(
    "plan_composition",
    ScriptIn,
    Scope.COMPOSE,
    "Compose the sbatch script from the composer's fields and plan it: checked, its GPU-hours "
    "and Slurm's start estimate (sbatch --test-only), with an id for submit. Submits nothing.",
)
def _plan_composition(request: HttpRequest, ctx: Context, body: ScriptIn) -> dict[str, Any]:
    plan = api_plans.planned_composition(request.auth.user, body, _made_by(ctx))
    return _out(api_plans.PlanOut, api_plans.plan_out(request, plan))


@_tool(
    "plan_script",
    api_plans.PlanScriptIn,
    Scope.COMPOSE,
    "Plan a whole sbatch script you wrote: the script checker reads it first (as a pasted "
    "script), then its GPU-hours and start estimate, with an id for submit. Submits nothing.",
)
def _plan_script(
    request: HttpRequest, ctx: Context, body: api_plans.PlanScriptIn
) -> dict[str, Any]:
    plan = api_plans.planned_script(request.auth.user, body, _made_by(ctx))
    return _out(api_plans.PlanOut, api_plans.plan_out(request, plan))


@_tool(
    "check_script",
    api_check.CheckIn,
    Scope.COMPOSE,
    "Check an sbatch script against a cluster's guidance: findings worst first, the #SBATCH "
    "options sbatch reads, the fixed script (as POST /api/v1/check).",
)
def _check_script(request: HttpRequest, ctx: Context, body: api_check.CheckIn) -> dict[str, Any]:
    return _out(api_check.CheckOut, api_check.check(request, body))


@_tool(
    "check_code",
    api_check_code.CheckCodeIn,
    Scope.COMPOSE,
    "Check a PyTorch training program (its files by name) against a cluster's guidance, line "
    "by line; it is parsed, never run (as POST /api/v1/check-code).",
)
def _check_code(
    request: HttpRequest, ctx: Context, body: api_check_code.CheckCodeIn
) -> dict[str, Any]:
    return _out(api_check_code.CheckCodeOut, api_check_code.check(request, body))


@_tool(
    "where_to_run",
    ScriptIn,
    Scope.COMPOSE,
    "A dry run on each of your logins: whether the job fits, its GPU-hours, and the start "
    "Slurm predicts (sbatch --test-only), best first (as POST /api/v1/where). Submits nothing.",
)
def _where(request: HttpRequest, ctx: Context, body: ScriptIn) -> dict[str, Any]:
    return _out(WhereOut, api.where_to_run(request, body))


@_tool(
    "dry_run",
    PlanIdIn,
    Scope.COMPOSE,
    "A plan's dry run: Slurm's start estimate when it was planned (sbatch --test-only), or why "
    "there is none, with its GPU-hours and findings.",
)
def _dry_run(request: HttpRequest, ctx: Context, body: PlanIdIn) -> dict[str, Any]:
    plan = _plan_out(request, deciding.find(body.plan_id, request.auth.user))
    keep = ("id", "cluster", "name", "start", "start_note", "gpu_hours_words", "findings")
    return {key: plan[key] for key in (*keep, "blocked", "expired", "confirm_url")}


# --- Submitting and cancelling --------------------------------------------------------------


class Confirmation(BaseModel):
    submit: bool = Field(description="Submit this job to Slurm now.")


def _question(plan: Plan) -> str:
    # The same words every time it is asked of this plan: the answer is pinned to them.
    start = (
        f"Slurm's estimate of its start: {plan.start:%Y-%m-%d %H:%M} UTC"
        if plan.start
        else (f"No start estimate: {plan.start_note}" if plan.start_note else "No start estimate.")
    )
    return (
        f"Submit the job “{plan.name}” on {plan.account.cluster.name} "
        f"({plan.account.username})? {plan.gpu_hours_words or 'GPU-hours unknown'}. {start}. "
        f"Findings of the script checker: {len(plan.findings)}. The script:\n\n{plan.script}"
    )


def _may_ask(ctx: Context) -> bool:
    """Whether this client can put a question to its user now: it declared elicitation, and
    this request's transport can carry one (the 2026 protocol's rounds, or a live channel)."""
    capabilities = ctx.client_capabilities
    if capabilities is None or capabilities.elicitation is None:
        return False
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS or ctx.session.can_send_request


async def _ask_the_user(plan_id: UUID, ctx: Context) -> Elicit[Confirmation] | None:
    request = current_request.get()
    if not request.auth.allows(Scope.SUBMIT) or not _may_ask(ctx):
        return None  # the plan waits for the user's word on the portal's page

    def open_plan() -> Plan | None:
        try:
            plan = deciding.find(plan_id, request.auth.user)
        except PlanRefused:
            return None
        return plan if plan.open and not plan.blocked else None

    plan = await sync_to_async(open_plan)()
    return None if plan is None else Elicit(_question(plan), Confirmation)


async def _submit(
    ctx: Context,
    plan_id: Annotated[
        UUID, Field(description="The plan's id, as plan_composition or plan_script gave it.")
    ],
    said: Annotated[ElicitationResult[Confirmation], Resolve(_ask_the_user)],
) -> Any:
    request = _allowed(Scope.COMPOSE)

    def decide() -> dict[str, Any]:
        user, made = request.auth.user, _made_by(ctx)
        if isinstance(said, AcceptedElicitation) and said.data is None:
            plan = deciding.ask_to_submit(plan_id, user)
            if plan.job_id:
                already = f"Submitted already, with the user's word: job {plan.job_id}."
                return _plan_out(request, plan) | {"said": already}
            return _plan_out(request, plan) | {
                "said": "Not submitted: it waits for the user's word on the portal, at "
                "confirm_url. Tell the user so; poll with dry_run or jobs.",
            }
        if isinstance(said, AcceptedElicitation) and said.data.submit:
            job = deciding.confirm(plan_id, user, via=Via.MCP)
            plan = deciding.find(plan_id, user)
            return _plan_out(request, plan) | {
                "said": f"Submitted with the user's word: job {job.pk}.",
                "job": JobOut.model_validate(job, context={"request": request}).model_dump(
                    mode="json"
                ),
            }
        plan = deciding.find(plan_id, user)
        what = f"The user said no to {plan.name} in {made['client'] or 'the client'}"
        actions.record(user, Via.MCP, made["token"], made["client"], what, plan=plan)
        return _plan_out(request, plan) | {"said": "The user said no: nothing submitted."}

    return await sync_to_async(_answered)(decide)


server.add_tool(
    _submit,
    name="submit",
    description="Ask to submit a plan. Never submits by itself: with a token that may submit "
    "and a client that can ask its user, the user is asked here and their yes submits it, once; "
    "otherwise the plan waits for their word on the portal's page (confirm_url). Refused for a "
    "plan with a blocking finding, one older than the portal's limit, or one the user declined.",
    structured_output=False,
)
_SCHEMAS["submit"], _NEEDS["submit"] = PlanIdIn, Scope.COMPOSE


@_tool(
    "cancel",
    JobIdIn,
    Scope.SUBMIT,
    "Cancel one of your jobs (scancel); its state shows CANCELLED once Slurm has stopped it.",
)
def _cancel(request: HttpRequest, ctx: Context, body: JobIdIn) -> dict[str, Any]:
    found = api_jobs.job_for_user(request.auth.user, body.job_id)
    made = _made_by(ctx)
    if refused := api_jobs.cancel(found, Via.MCP, made["token"], made["client"]):
        raise ToolError(refused)
    return JobOut.model_validate(found, context={"request": request}).model_dump(mode="json")


# --- Resources: the guidance and each cluster's facts, cited as the pages cite them ----------


@server.resource(
    "guidance://documents/{slug}",
    name="guidance_document",
    description="A guidance document of this site, whole, with the address of its page.",
    mime_type="text/markdown",
)
async def _document(slug: str) -> str:
    def read() -> str:
        doc = guidance.Document.objects.filter(slug=slug).first()
        if doc is None:
            raise ValueError(f"There is no guidance document {slug!r}.")
        page = current_request.get().build_absolute_uri(doc.get_absolute_url())
        return f"# {doc.title}\n\nSource: {doc.file_name}, {page}\n\n{doc.text}"

    return await sync_to_async(read)()


@server.resource(
    "cluster://{slug}",
    name="cluster_facts",
    description="A cluster's published facts: partitions (node types, GPU types, limits) and "
    "storage, each with its source as the cluster's page cites it.",
    mime_type="application/json",
)
async def _cluster(slug: str) -> str:
    return await sync_to_async(_cluster_facts)(slug)


def _cluster_facts(slug: str) -> str:
    cluster = guidance.Cluster.objects.filter(slug=slug).first()
    if cluster is None:
        raise ValueError(f"There is no cluster {slug!r}.")
    request = current_request.get()
    documents = known_documents()

    def cited(obj: guidance.Sourced) -> dict[str, str] | None:
        source = as_source(obj)
        if source is None:
            return None
        citation = cite(source, documents)
        url = request.build_absolute_uri(citation.url) if citation.url else ""
        return {"label": citation.label, "url": url}

    partitions = cluster.partitions.select_related("gpu_type")
    return json.dumps(
        {
            "cluster": cluster.slug,
            "name": cluster.name,
            "page": request.build_absolute_uri(cluster.get_absolute_url()),
            "source": cited(cluster),
            "partitions": [
                {
                    "name": p.name,
                    "slurm_partition": p.slurm_partition,
                    "gpu_type": p.gpu_type.name,
                    "gpus_per_node": p.gpus_per_node,
                    "cpus_per_node": p.cpus_per_node,
                    "memory_per_node_mb": p.memory_per_node_mb,
                    "node_count": p.node_count,
                    "max_hours": p.max_hours,
                    "default_hours": p.default_hours,
                    "source": cited(p),
                }
                for p in partitions
            ],
            "storage": [
                {
                    "name": tier.name,
                    "kind": tier.kind,
                    "path": tier.path,
                    "quota_bytes": tier.quota_bytes,
                    "quota_files": tier.quota_files,
                    "purge_policy": tier.purge_policy,
                    "persistent": tier.persistent,
                    "source": cited(tier),
                }
                for tier in cluster.storage_tiers.all()
            ],
        },
        cls=DjangoJSONEncoder,
    )
