"""The API's jobs (/api/v1/jobs): submit a composition or a whole script, list, show, cancel and
read the output, each as the job pages do it (jobs/views.py, jobs/compose/submit.py), for the
token's user alone: anyone else's job is answered 404, as if it did not exist. As on the pages, the
other jobs of a login the user shares with other portal users are listed and shown (`mine`
false), and acting on them is answered 403.

A submission goes the page's exactly-once way: one job per key (the Idempotency-Key header or
the `submission_key` field), queued for the submission task when it commits. What reaches the
cluster while the client waits (cancel, output) says a cluster's failure in plain words: 502,
or 503 with Retry-After when trying again later can help.
"""

from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Field, Query, Router, Schema, Status
from ninja.pagination import PageNumberPagination, paginate

from guidance.models import Cluster
from jobs import polling
from jobs.cluster import remote
from jobs.cluster.errors import ClusterError
from jobs.compose import sending, submit
from jobs.compose.forms import ComposeForm
from jobs.models import Job, JobState, Via
from jobs.plans import actions
from jobs.runs import listing, reading, rerun
from portal.api_auth import READ, SUBMIT
from portal.api_job_schemas import (
    ComposedJobIn,
    Filters,
    JobDetailOut,
    JobOut,
    OutputOut,
    ScriptJobIn,
)
from portal.api_planning import InvalidInput, composed_script, invalid
from portal.api_schemas import CHECKED, FieldError, Message

router = Router(tags=["jobs"])

# Ninja answers these itself (portal/api.py's handlers): every endpoint may give them.


PAGE_SIZE = 25
MAX_PAGE_SIZE = 100


class Pages(PageNumberPagination):
    """Ninja's pages, with bounds: a page number past any database's offset was a 500."""

    class Input(Schema):
        page: int = Field(1, ge=1, le=1_000_000)
        page_size: int = Field(PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE)


# A cluster that did not answer (503) is asked again after this long.
RETRY_AFTER_SECONDS = 30


class JobNotFound(Exception):
    """None of the token user's jobs has this id: answered 404 (portal/api.py)."""

    def __init__(self, job_id: int) -> None:
        super().__init__(job_id)
        self.job_id = job_id


class NotYours(Exception):
    """A job of a login the user shares, not theirs: seen, not acted on (403, portal/api.py)."""

    def __init__(self, job: Job) -> None:
        super().__init__(job.not_yours)
        self.message = job.not_yours


class ClusterUnavailable(Exception):
    """The cluster failed while the client waited: 502, or 503 when a retry can help."""

    def __init__(self, error: ClusterError) -> None:
        super().__init__(error.message)
        self.error = error


def _get_job_for_user(request: HttpRequest, job_id: int, *, to_act: bool = True) -> Job:
    return job_for_user(request.auth.user, job_id, to_act=to_act)


def job_for_user(user, job_id: int, *, to_act: bool = True) -> Job:
    # Who may see it is in the query: anyone else's job does not exist, as far as this token
    # knows. Only its owner acts on it (jobs.views._get_job_for_user decides the same).
    visible = Job.objects.visible_to(user).select_related("account__cluster", "token", "plan")
    if (job := visible.filter(pk=job_id).first()) is None:
        raise JobNotFound(job_id)
    if to_act and job.owner_id != user.pk:
        raise NotYours(job)
    return job


def _key(request: HttpRequest, field: str | None) -> str:
    """The submission key the client sent, as sending stores it; "" for none."""
    header = request.headers.get("Idempotency-Key")
    if header is not None and field is not None and header != field:
        raise invalid(
            "submission_key",
            "key_mismatch",
            "The Idempotency-Key header and submission_key differ: send one, or the same.",
        )
    key = header if header is not None else field
    if key is None:
        return ""
    if not key.strip() or len(key) > 255:
        raise invalid(
            "submission_key", "invalid_key", "A submission key is 1 to 255 characters long."
        )
    return sending.api_key(key)


def _submitted(request: HttpRequest, made: submit.Submission) -> Status:
    if made.created:  # who asked, on the job's page and in its record
        Job.objects.filter(pk=made.job.pk).update(
            via=Via.API, token=request.auth, client=request.headers.get("User-Agent", "")[:100]
        )
    job = Job.objects.select_related("account__cluster", "token", "plan").get(pk=made.job.pk)
    return Status(201 if made.created else 200, job)


# --- Submitting ------------------------------------------------------------------------------


@router.post(
    "",
    response={200: JobOut, 201: JobOut} | CHECKED,
    url_name="jobs_submit",
    auth=SUBMIT,
    operation_id="submit_script",
    summary="Submit a whole sbatch script",
)
def submit_script(request: HttpRequest, job: ScriptJobIn) -> Status:
    key = _key(request, job.submission_key)
    cluster = script_cluster(job.cluster)
    try:
        made = submit.whole_script(
            request.auth.user, cluster, job.name, job.script, key, job.accept_findings
        )
    except submit.NotSubmitted as refused:
        raise invalid(refused.field, refused.code, refused.message) from None
    except submit.Findings as findings:
        errors = [
            FieldError(field="script", code=note.code, message=note.message)
            for note in findings.notes
        ]
        raise InvalidInput(errors) from None
    return _submitted(request, made)


@router.post(
    "/compose",
    response={200: JobOut, 201: JobOut} | CHECKED,
    url_name="jobs_compose",
    auth=SUBMIT,
    operation_id="submit_composition",
    summary="Compose a job's script from the composer's fields (as POST /script) and submit it",
)
def submit_composition(request: HttpRequest, job: ComposedJobIn) -> Status:
    key = _key(request, job.submission_key)
    form = ComposeForm(job.form_data())
    composed = composed_script(job, form, request.auth.user)
    try:
        made = submit.composed(request.auth.user, form, composed, key)
    except submit.NotSubmitted as refused:
        raise invalid(refused.field, refused.code, refused.message) from None
    return _submitted(request, made)


def _only_params(request: HttpRequest, *names: str) -> None:
    # As the bodies forbid unknown fields: a misspelt filter would otherwise list every job.
    if unknown := sorted(set(request.GET) - set(names)):
        raise invalid(
            unknown[0],
            "unknown_parameter",
            f"No query parameter '{unknown[0]}' here. Known: {', '.join(names)}.",
        )


def script_cluster(slug: str) -> Cluster:
    cluster = Cluster.objects.filter(slug=slug).first()
    if cluster is None:
        known = ", ".join(Cluster.objects.values_list("slug", flat=True))
        raise invalid(
            "cluster", "unknown_cluster", f"No cluster '{slug}'. Known clusters: {known}."
        )
    if not cluster.takes_scripts:
        raise invalid(
            "cluster",
            "guidance_only",
            f"{cluster.name} is not scheduled by Slurm: the portal submits no scripts there.",
        )
    return cluster


# --- Following -------------------------------------------------------------------------------


@router.get(
    "",
    response={200: list[JobOut]} | CHECKED,
    url_name="jobs",
    auth=READ,
    operation_id="jobs",
    summary="Your jobs, with the other jobs of logins you share (mine: false), newest first",
)
@paginate(Pages, page_size=PAGE_SIZE, max_page_size=MAX_PAGE_SIZE)
def jobs(request: HttpRequest, filters: Query[Filters]) -> QuerySet[Job]:
    _only_params(request, "state", "cluster", "page", "page_size")
    return jobs_of(request.auth.user, filters)


def jobs_of(user, filters: Filters) -> QuerySet[Job]:
    """The jobs the user sees (theirs and those of logins they share), newest first."""
    queryset = Job.objects.visible_to(user)
    queryset = queryset.select_related("account__cluster", "token", "plan")
    if filters.state == "active":
        queryset = queryset.filter(state__in=JobState.active())
    elif filters.state == "final":
        queryset = queryset.filter(state__in=JobState.final())
    elif filters.state:
        queryset = queryset.filter(state=filters.state)
    if filters.cluster:
        queryset = queryset.filter(account__cluster__slug=filters.cluster)
    return queryset


@router.get(
    "/{job_id}",
    response={200: JobDetailOut, 404: Message} | CHECKED,
    url_name="job",
    auth=READ,
    operation_id="job",
    summary="One job: its state and why, its wait, GPU use, efficiency and events",
)
def job(request: HttpRequest, job_id: int) -> Job:
    found = _get_job_for_user(request, job_id, to_act=False)
    if not found.is_final:
        polling.wake(pk=found.account_id)  # polled every beat while a client follows it
    return found


@router.post(
    "/{job_id}/cancel",
    response={202: JobOut, 403: Message, 404: Message, 409: Message, 502: Message, 503: Message}
    | CHECKED,
    url_name="job_cancel",
    auth=SUBMIT,
    operation_id="job_cancel",
    summary="Cancel a job (scancel); its state shows CANCELLED once Slurm has stopped it",
)
def job_cancel(request: HttpRequest, job_id: int) -> Status:
    obj = _get_job_for_user(request, job_id)
    client = request.headers.get("User-Agent", "")
    if refused := cancel(obj, Via.API, request.auth, client):
        return Status(409, {"detail": refused})
    return Status(202, obj)


def cancel(obj: Job, via: Via, token, client: str) -> str | None:
    """scancel for the job's owner, recorded; why not in words, or None once asked of Slurm.
    ClusterUnavailable when the cluster failed."""
    if obj.is_final or not obj.slurm_id:
        return "The job is not queued or running: there is nothing to cancel."
    try:
        remote.cancel(obj)
    except remote.SlurmRefused as refused:
        return f"Slurm did not cancel it: {refused.message}"
    except ClusterError as error:
        raise ClusterUnavailable(error) from None
    said = f"Cancel requested through {Via(via).label} (token “{token.name}”)."
    obj.events.create(state=obj.state, detail=said)
    what = f"Cancelled {obj.name} ({obj.slurm_id})"
    actions.record(token.user, via, token, client, what, job=obj)
    return None


@router.get(
    "/{job_id}/output",
    response={200: OutputOut, 403: Message, 404: Message, 502: Message, 503: Message} | CHECKED,
    url_name="job_output",
    auth=READ,
    operation_id="job_output",
    summary="The end of a job's stdout (stream=out) or stderr (stream=err)",
)
def job_output(
    request: HttpRequest, job_id: int, stream: str = "out", task: str = ""
) -> dict[str, Any]:
    _only_params(request, "stream", "task")
    obj = _get_job_for_user(request, job_id)
    if stream not in ("out", "err"):
        raise invalid("stream", "unknown_stream", "The stream is 'out' (stdout) or 'err'.")
    if task and not obj.tasks.filter(task_id=task).exists():
        raise invalid(
            "task", "unknown_task", f"This job has no array task {task} that has started."
        )
    try:
        tail = remote.output_tail(obj, stream, task) if obj.slurm_id else b""
    except ClusterError as error:
        raise ClusterUnavailable(error) from None
    return {"stream": stream, "text": tail.decode(errors="replace"), "cap_bytes": remote.OUTPUT_CAP}


@router.post(
    "/{job_id}/rerun-failed",
    response={200: JobOut, 201: JobOut, 403: Message, 404: Message, 409: Message} | CHECKED,
    url_name="job_rerun_failed",
    auth=SUBMIT,
    operation_id="job_rerun_failed",
    summary="Run a finished sweep's failed runs again, as a new job that runs only those",
)
def job_rerun_failed(request: HttpRequest, job_id: int) -> Status:
    """201 with the new job (its `rerun_of` is this one); 200 with the job an earlier request
    with the same Idempotency-Key made. 409 while the sweep runs or when no run failed; 422 for
    a job that is not a sweep."""
    obj = _get_job_for_user(request, job_id)
    key = _key(request, None)
    if made := sending.made_with(obj.owner, key):
        return _submitted(request, submit.Submission(made, created=False))
    reading.refresh(obj)  # the runs' own lines say which failed
    runs = listing.runs_of(obj)
    if refused := rerun.refusal(obj, runs):
        if refused.conflict:
            return Status(409, {"detail": refused.message})
        raise invalid(None, "not_a_sweep", refused.message)
    again, created = rerun.rerun(obj, runs, key)
    return _submitted(request, submit.Submission(again, created))
