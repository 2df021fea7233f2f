"""One job per "Submit" click: each page with a Submit button carries a fresh key, and the job
it makes keeps it. A double click, a form sent again (reload, back button) or two requests that
race find the job the first one made. The key is the user's own: another user's cannot match.
The API's submissions go the same way, with the client's Idempotency-Key (`submit`)."""

import hashlib
import re
import uuid

from django.contrib import messages
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from jobs import tasks
from jobs.models import ClusterAccount, Composition, Job

FIELD = "submission_key"
_KEY = re.compile(r"[0-9a-f]{32}")


def new_key() -> str:
    return uuid.uuid4().hex


def key_of(request: HttpRequest) -> str:
    """The form's key, or "": a page without one (an older one) is not deduplicated."""
    key = request.POST.get(FIELD, "")
    return key if _KEY.fullmatch(key) else ""


def already_sent(request: HttpRequest) -> HttpResponse | None:
    """The way to the job this form made already, or None."""
    key = key_of(request)
    job = key and Job.objects.filter(owner=request.user, submission_key=key).first()
    if not job:
        return None
    messages.info(request, "This form was sent already: here is the job it made.")
    return redirect(job)


def send(
    request: HttpRequest,
    composition: Composition,
    account: ClusterAccount,
    replaces: Job | None = None,
) -> HttpResponse:
    """Makes the job and queues its submission, unless this form made one already. `replaces`:
    a waiting job to cancel once Slurm has accepted this one."""
    if sent := already_sent(request):
        return sent
    name = composition.fields.get("job_name") or "job"
    try:
        job = _queued(
            request.user, account, name, composition.script, key_of(request), composition, replaces
        )
    except IntegrityError:
        if sent := already_sent(request):  # the other click won the race
            _roll_back_the_rest()  # what this request made before (a composition)
            return sent
        raise
    return redirect(job)


def submit(
    owner,
    account: ClusterAccount,
    name: str,
    script: str,
    key: str,
    composition=None,
    rerun_of: Job | None = None,
) -> tuple[Job, bool]:
    """The job this key made already (and False), or a new one queued for submission (and True).
    The key is 32 hex digits, as `api_key` makes them, or "" for no deduplication. `rerun_of`:
    the sweep whose failed runs this script runs again (jobs.runs.rerun)."""
    if made := made_with(owner, key):
        return made, False
    try:
        job = _queued(owner, account, name, script, key, composition, rerun_of=rerun_of)
        return job, True
    except IntegrityError:
        if made := made_with(owner, key):  # a retry raced this request and won
            _roll_back_the_rest()
            return made, False
        raise


def api_key(client_key: str) -> str:
    """A client's Idempotency-Key (any text) as a submission key: its digest, so that any length
    or alphabet fits the column, and equal keys still meet."""
    return hashlib.sha256(client_key.encode()).hexdigest()[:32]


def made_with(owner, key: str) -> Job | None:
    """The job the owner's key made already, if any."""
    return Job.objects.filter(owner=owner, submission_key=key).first() if key else None


def _queued(
    owner,
    account,
    name: str,
    script: str,
    key: str,
    composition,
    replaces: Job | None = None,
    rerun_of: Job | None = None,
) -> Job:
    with transaction.atomic():
        job = Job.objects.create(
            owner=owner,
            account=account,
            composition=composition,
            name=name,
            script=script,
            submission_key=key,
            replaces=replaces,
            rerun_of=rerun_of,
        )
        queued = "Queued for submission"
        if replaces is not None:
            queued += f", to replace job {replaces.slurm_id} once Slurm accepts it"
        if rerun_of is not None:
            queued += f", to run the failed runs of job {rerun_of.slurm_id} again"
        job.events.create(state=job.state, detail=f"{queued}.")
        tasks.queue_submission(job)
    return job


def _roll_back_the_rest() -> None:
    if transaction.get_connection().in_atomic_block:
        transaction.set_rollback(True)
