"""Plans in the API (and for the MCP tools, which call the same functions): a script or a
composition checked, costed and estimated, with an id; asking to submit it never submits, it
waits for the user's word on the portal's page (jobs.plans)."""

from datetime import datetime
from typing import Any
from uuid import UUID

from django.http import HttpRequest
from ninja import Field, Router, Schema, Status
from pydantic import ConfigDict, field_validator

from guidance.engine.script_check.check import MAX_CHARS
from jobs.compose import program_files
from jobs.compose.forms import ComposeForm
from jobs.models import Plan, Via
from jobs.plans import deciding
from jobs.plans.making import PlanRefused, plan_script
from portal.api_auth import COMPOSE, READ
from portal.api_check import MAX_FILES, SourceOut, refused_files
from portal.api_job_schemas import refuse_empty_script, refuse_nul
from portal.api_jobs import script_cluster
from portal.api_planning import InvalidInput, composed_script, invalid
from portal.api_schemas import CHECKED, Message, ScriptIn

router = Router(tags=["plans"])


class PlanScriptIn(Schema):
    model_config = ConfigDict(extra="forbid")

    cluster: str = Field(max_length=50, description="Slug, as GET /api/v1/clusters lists it.")
    name: str = Field(max_length=64, description="The job's name, as POST /jobs takes it.")
    script: str = Field(max_length=MAX_CHARS, description="The sbatch script, from #! on.")
    files: dict[str, str] = Field(
        default_factory=dict,
        description=f"The program the script starts, as POST /check takes it (at most "
        f"{MAX_FILES} files).",
    )

    _no_nul = field_validator("cluster", "name", "script", mode="before")(refuse_nul)
    _not_empty = field_validator("script")(refuse_empty_script)


class PlanFindingOut(Schema):
    code: str
    severity: str = Field(description="fails, wastes or advice: 'fails' blocks the plan.")
    message: str
    fix: str
    source: SourceOut | None = Field(None, description="The guidance it follows, if any.")


class PlanOut(Schema):
    id: UUID
    cluster: str
    name: str
    state: str = Field(description="checked, waiting (for the user's word), submitted, declined.")
    expired: bool = Field(description="Too old to be submitted: make a new plan.")
    expires: datetime
    blocked: bool = Field(description="A finding says the job would fail: it cannot be submitted.")
    findings: list[PlanFindingOut]
    gpu_hours: float | None
    gpu_hours_words: str
    start: datetime | None = Field(description="Slurm's --test-only estimate when planned.")
    start_note: str = Field(description="Why there is no estimate, if there is none.")
    script: str
    job_id: int | None = Field(description="The job it made, once the user confirmed it.")
    confirm_url: str = Field(description="Where the user confirms or declines it.")


def plan_out(request: HttpRequest, plan: Plan) -> dict[str, Any]:
    return {
        "id": plan.pk,
        "cluster": plan.account.cluster.slug,
        "name": plan.name,
        "state": plan.state,
        "expired": plan.expired,
        "expires": plan.expires,
        "blocked": plan.blocked,
        "findings": plan.findings,
        "gpu_hours": plan.gpu_hours,
        "gpu_hours_words": plan.gpu_hours_words,
        "start": plan.start,
        "start_note": plan.start_note,
        "script": plan.script,
        "job_id": plan.job_id,
        "confirm_url": request.build_absolute_uri(plan.get_absolute_url()),
    }


def made_by(request: HttpRequest) -> dict[str, Any]:
    """Who is asking: the API, its token, and the client's name for itself."""
    return {
        "via": Via.API,
        "token": request.auth,
        "client": request.headers.get("User-Agent", "")[:100],
    }


def _refused(refused: PlanRefused) -> InvalidInput:
    return invalid(refused.field, refused.code, refused.message)


@router.post(
    "",
    response={201: PlanOut} | CHECKED,
    url_name="plans",
    auth=COMPOSE,
    operation_id="plan_script",
    summary="Plan a whole sbatch script: checked, its GPU-hours and start estimate; not submitted",
)
def plan_a_script(request: HttpRequest, body: PlanScriptIn):
    return Status(201, plan_out(request, planned_script(request.auth.user, body, made_by(request))))


def planned_script(user, body: PlanScriptIn, made: dict[str, Any]) -> Plan:
    """The plan of a whole script, by whoever `made` says (the API, an MCP client)."""
    files = program_files.without_bom(body.files)
    if files and (found := program_files.problems(files)):
        raise refused_files(found)
    try:
        return plan_script(
            user,
            script_cluster(body.cluster),
            body.name,
            body.script,
            program=files or None,
            **made,
        )
    except PlanRefused as refused:
        raise _refused(refused) from None


@router.post(
    "/compose",
    response={201: PlanOut} | CHECKED,
    url_name="plans_compose",
    auth=COMPOSE,
    operation_id="plan_composition",
    summary="Plan the script the composer writes from its fields (as POST /script); not submitted",
)
def plan_a_composition(request: HttpRequest, job: ScriptIn):
    plan = planned_composition(request.auth.user, job, made_by(request))
    return Status(201, plan_out(request, plan))


def planned_composition(user, job: ScriptIn, made: dict[str, Any]) -> Plan:
    """The plan of the script the composer writes from these fields."""
    form = ComposeForm(job.form_data())
    composed = composed_script(job, form, user)
    cluster = script_cluster(job.cluster)
    try:
        return plan_script(user, cluster, job.job_name, composed.script, **made)
    except PlanRefused as refused:
        raise _refused(refused) from None


@router.get(
    "/{plan_id}",
    response={200: PlanOut, 404: Message} | CHECKED,
    url_name="plan",
    auth=READ,
    operation_id="plan",
    summary="A plan: its state, findings, cost, estimate, and its job once confirmed",
)
def plan(request: HttpRequest, plan_id: UUID):
    try:
        return Status(200, plan_out(request, deciding.find(plan_id, request.auth.user)))
    except PlanRefused as refused:
        return Status(404, {"detail": refused.message})


@router.post(
    "/{plan_id}/submit",
    response={202: PlanOut, 404: Message, 409: Message} | CHECKED,
    url_name="plan_submit",
    # Asking is not submitting: the user's word on the portal's page is.
    auth=COMPOSE,
    operation_id="plan_submit",
    summary="Ask to submit a plan: it waits for the user's word on the portal (confirm_url)",
    description="Never submits by itself. Refused (409) for a plan with a blocking finding, "
    "one older than PLAN_MINUTES, or one the user declined.",
)
def submit_plan(request: HttpRequest, plan_id: UUID):
    try:
        plan = deciding.ask_to_submit(plan_id, request.auth.user)
    except PlanRefused as refused:
        status = 404 if refused.code == "unknown_plan" else 409
        return Status(status, {"detail": refused.message})
    return Status(202, plan_out(request, plan))
