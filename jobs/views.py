"""The job pages: list, follow, cancel, retry, read output, GPU use, its program and the next
run. They read the database; the cluster is asked by Celery tasks (jobs/tasks.py), except for
the output a user asks to see, a cancel and "Check the program" (its files read), which go
through jobs.cluster.remote while the user waits."""

from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe
from django_htmx.http import HttpResponseStopPolling

from guidance.engine.efficiency import apply_suggestions
from jobs import polling, tasks
from jobs.cluster import remote
from jobs.cluster.errors import ClusterError
from jobs.compose import sending
from jobs.compose.forms import ComposeForm
from jobs.compose.from_form import compose
from jobs.compose.sooner import can_start_sooner
from jobs.gpu import efficiency, program_check
from jobs.gpu.monitoring import is_monitored
from jobs.models import ClusterAccount, Composition, Job, JobState
from jobs.runs import listing, reading, rerun

PAGE_SIZE = 25


def _get_job_for_user(request: HttpRequest, pk: int, *, to_act: bool = True) -> Job:
    """The user's own job; with `to_act=False` (reading its page), also another job of a login
    the user shares with other portal users (Job.objects.visible_to), which they see but cannot
    act on (403). Anyone else's job does not exist, as far as this user can tell (404)."""
    visible = Job.objects.visible_to(request.user).select_related("account__cluster")
    job = get_object_or_404(visible, pk=pk)
    job.mine = job.owner_id == request.user.pk
    if to_act and not job.mine:
        raise PermissionDenied(job.not_yours)
    return job


@login_required
@require_safe
def jobs(request: HttpRequest) -> HttpResponse:
    # With the other jobs of logins the user shares, each marked (templates/jobs/job_shared.html).
    queryset = Job.objects.visible_to(request.user).select_related("account__cluster")
    state = request.GET.get("state", "")
    cluster = request.GET.get("cluster", "")
    if state in JobState.values:
        queryset = queryset.filter(state=state)
    if cluster:
        queryset = queryset.filter(account__cluster__slug=cluster)
    page = Paginator(queryset, PAGE_SIZE).get_page(request.GET.get("page"))
    for listed in page:  # what each used of what it was given, from its accounting
        listed.usage = efficiency.usage(listed)
        listed.mine = listed.owner_id == request.user.pk
    ctx = {
        "page": page,
        "states": JobState.choices,
        "state": state,
        "cluster": cluster,
        "clusters": ClusterAccount.objects.filter(owner=request.user).select_related("cluster"),
        "watching": any(not job.is_final for job in page),
    }
    if request.htmx and not ctx["watching"]:
        return HttpResponseStopPolling()
    if ctx["watching"]:
        polling.wake(owner=request.user)  # its jobs are polled every beat while it looks
    return render(request, "jobs/jobs.html#rows" if request.htmx else "jobs/jobs.html", ctx)


@login_required
@require_safe
def job(request: HttpRequest, pk: int) -> HttpResponse:
    obj = _get_job_for_user(request, pk, to_act=False)
    if not obj.is_final and obj.account_id:
        polling.wake(pk=obj.account_id)  # polled every beat while someone looks
    ctx = {"job": obj, "events": obj.events.all(), "tasks": obj.tasks.all()}
    ctx["sweep"] = listing.is_sweep(obj)  # its tasks are its runs, in the Runs table
    if request.htmx:
        response = render(request, "jobs/job.html#status", ctx)
        # 286 swaps this last answer in and tells htmx to stop asking.
        return response if not obj.is_final else stop_polling(response)
    monitored = bool(obj.slurm_id) and is_monitored(obj.script)
    more = {"monitored": monitored, "can_start_sooner": obj.mine and can_start_sooner(obj)}
    more |= _rerun_links(obj) | _runs_context(request, obj)
    return render(request, "jobs/job.html", ctx | _gpu_context(obj) | more)


@login_required
@require_safe
def job_runs(request: HttpRequest, pk: int) -> HttpResponse:
    """A sweep's runs alone, for htmx to refresh while it runs and to sort."""
    obj = _get_job_for_user(request, pk, to_act=False)
    if not request.htmx:  # a sort link followed without JavaScript: the whole page, sorted
        query = urlencode({"sort": request.GET.get("sort", "")})
        return redirect(f"{obj.get_absolute_url()}?{query}#job-runs")
    ctx = _runs_context(request, obj)
    if not ctx:
        return stop_polling(HttpResponse(""))
    response = render(request, "jobs/job_runs.html", ctx)
    return stop_polling(response) if obj.is_final else response


def _runs_context(request: HttpRequest, obj: Job) -> dict:
    """A sweep's runs, sorted as asked; {} for a job that is not a sweep."""
    if not listing.is_sweep(obj):
        return {}
    if obj.mine:  # the lines are in the owner's results folder, read through their login
        reading.refresh(obj)
    runs = listing.runs_of(obj)
    ordered, sort = listing.sorted_runs(runs, request.GET.get("sort", "run"))
    refused = rerun.refusal(obj, runs)
    return {
        "job": obj,
        "runs": runs,
        "ordered_runs": ordered,
        "columns": _columns(runs, sort),
        "sort": sort,
        "can_rerun": obj.mine and refused is None,
        "rerun_key": sending.new_key(),
    }


def _columns(runs: listing.Runs, sort: str) -> list[dict]:
    """The table's headers: each sorts by its column, and the second click the other way."""
    named = [("run", "Run")]
    named += [(f"param:{name}", name) for name in runs.names]
    named += [("state", "State"), ("exit", "Exit code"), ("elapsed", "Time"), ("node", "Node")]
    if not runs.grouped:
        named.append(("gpu", "GPU use"))
    return [
        {
            "key": key,
            "label": label,
            "next": f"-{key}" if sort == key else key,
            "order": "ascending" if sort == key else "descending" if sort == f"-{key}" else "",
        }
        for key, label in named
    ]


def _rerun_links(obj: Job) -> dict:
    """The sweep this job re-runs the failed runs of, and the jobs that re-run this one's."""
    return {
        "rerun_of_numbers": rerun.numbers_run(obj) if obj.rerun_of_id else [],
        "reruns": [(again, rerun.numbers_run(again)) for again in obj.reruns.all()],
    }


@login_required
@require_POST
def job_rerun_failed(request: HttpRequest, pk: int) -> HttpResponse:
    """A new job that runs the sweep's failed runs again, and only those."""
    obj = _get_job_for_user(request, pk)
    if sent := sending.already_sent(request):
        return sent
    reading.refresh(obj)  # the runs' own lines say which failed
    runs = listing.runs_of(obj)
    if refused := rerun.refusal(obj, runs):
        messages.info(request, refused.message)
        return redirect(obj)
    again, _ = rerun.rerun(obj, runs, sending.key_of(request))
    numbers = ", ".join(str(run.number) for run in runs.failed)
    messages.success(request, f"Runs {numbers} are queued to run again as this job.")
    return redirect(again)


@login_required
@require_POST
def job_program_check(request: HttpRequest, pk: int) -> HttpResponse:
    """Reads the job's Python program from the cluster while the user waits, checks it, and
    keeps what it found; the page shows it."""
    obj = _get_job_for_user(request, pk)
    entry, why = program_check.offered(obj)
    if entry is None:
        messages.info(request, why)
    else:
        program_check.check_program(obj, entry)
    return redirect(f"{obj.get_absolute_url()}#program-check")


def stop_polling(response: HttpResponse) -> HttpResponse:
    """An htmx answer that is swapped in, and then tells htmx to stop asking (286)."""
    response.status_code = HttpResponseStopPolling.status_code
    return response


@login_required
@require_POST
def job_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    obj = _get_job_for_user(request, pk)
    if obj.is_final or not obj.slurm_id:
        messages.info(request, "The job is not queued or running: there is nothing to cancel.")
        return redirect(obj)
    try:
        remote.cancel(obj)
    except (ClusterError, remote.SlurmRefused) as error:
        messages.error(request, f"Could not cancel: {error.message}")
    else:
        obj.events.create(state=obj.state, detail="Cancel requested.")
        messages.success(request, "Cancel sent; the page shows when Slurm has stopped the job.")
    return redirect(obj)


@login_required
@require_POST
def job_retry(request: HttpRequest, pk: int) -> HttpResponse:
    obj = _get_job_for_user(request, pk)
    if obj.state == JobState.SUBMIT_FAILED:
        obj.retry_submission()
        tasks.queue_submission(obj)
    return redirect(obj)


OUTSIDE_OUTPUT = (
    "This job was submitted outside the portal, and Slurm's accounting does not say where it "
    "wrote its output (by default slurm-<job id>.out in the folder sbatch ran in)."
)


@login_required
@require_safe
def job_output(request: HttpRequest, pk: int) -> HttpResponse:
    obj = _get_job_for_user(request, pk)
    stream = "err" if request.GET.get("stream") == "err" else "out"
    task = request.GET.get("task", "")
    text, error = "", ""
    if obj.is_outside:
        error = OUTSIDE_OUTPUT  # its script chose where it writes; the portal's folder is not it
    elif task and not obj.tasks.filter(task_id=task).exists():
        error = f"This job has no array task {task} that has started: it has no output yet."
    elif obj.slurm_id:
        try:
            text = remote.output_tail(obj, stream, task).decode(errors="replace")
        except ClusterError as failure:
            error = failure.message
    ctx = {"job": obj, "stream": stream, "text": text, "error": error, "cap": remote.OUTPUT_CAP}
    ctx["task"] = task
    return render(request, "jobs/job_output.html", ctx)


OUTSIDE_OUTPUT = (
    "This job was submitted outside the portal, and Slurm's accounting does not say where it "
    "wrote its output (by default slurm-<job id>.out in the folder sbatch ran in)."
)


@login_required
@require_safe
def job_gpus(request: HttpRequest, pk: int) -> HttpResponse:
    """The GPU fragment alone, for htmx to refresh while the job runs."""
    obj = _get_job_for_user(request, pk, to_act=False)
    response = render(request, "jobs/job_gpus.html", _gpu_context(obj))
    return stop_polling(response) if request.htmx and obj.is_final else response


def _gpu_context(obj: Job) -> dict:
    return {
        "job": obj,
        # A finished sweep's report sizes each run's time from its runs.
        "gpu": efficiency.gpu_panel(obj, listing.each_run(obj) if obj.is_final else None),
        # The program's check read the owner's files: theirs alone, as its output is.
        "program": program_check.panel(obj) if obj.mine else None,
        "sample_seconds": max(settings.SAMPLE_SECONDS, 2),
        "warmup_minutes": round(settings.GPU_WARMUP_SECONDS / 60),
    }


@login_required
@require_POST
def job_next_run(request: HttpRequest, pk: int) -> HttpResponse:
    """A new composition from the job's, with the efficiency report's suggestions applied."""
    obj = _get_job_for_user(request, pk)
    composition = obj.composition
    if composition is None:
        messages.error(
            request,
            "This job has no composition in the portal (it was deleted, or the job was not "
            "composed here): apply the suggestions in the composer yourself.",
        )
        return redirect(obj)
    suggestions = efficiency.job_report(obj, listing.each_run(obj)).suggestions
    if not suggestions:
        messages.info(request, "The report suggests no change: submit the same composition again.")
        return redirect(composition)
    fields = apply_suggestions(composition.fields, suggestions)
    changes = ", ".join(s.change for s in suggestions)
    composed = compose(ComposeForm(fields))
    if composition.edited or composed is None or not composed.script:
        # The form decides, not us: it shows what needs the user's eye beside the field.
        why = (
            "its script was edited by hand, so redo those edits"
            if composition.edited
            else "the composer has questions about them"
        )
        messages.warning(
            request, f"The next run's settings ({changes}) are in the composer: {why}."
        )
        query = urlencode({k: v for k, v in fields.items() if v is not None})
        return redirect(f"{reverse('jobs:compose')}?{query}")
    new = Composition.objects.create(
        owner=request.user,
        name=f"{composition.name} (next run)"[:100],
        fields=fields,
        script=composed.script,
    )
    messages.success(request, f"Saved “{new.name}” with {changes}.")
    return redirect(new)
