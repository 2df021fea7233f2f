""" "Could it start sooner?" on a waiting job's page: Slurm's estimate for the job as it is and
for each change (jobs.compose.sooner), and one click to submit the sooner one in its place."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from jobs.compose import sending, sooner
from jobs.compose.forms import ComposeForm
from jobs.compose.from_form import compose
from jobs.models import Composition, Job


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def start_sooner(request: HttpRequest, pk: int) -> HttpResponse:
    job = get_object_or_404(
        Job.objects.select_related("account__cluster", "composition"), pk=pk, owner=request.user
    )
    if not sooner.can_start_sooner(job):
        messages.info(request, "Only a job that still waits, composed here, can be moved.")
        return redirect(job)
    if request.method == "POST":
        return _replace(request, job)
    answered = sooner.estimate(job, sooner.options(job))
    context = {
        "job": job,
        "answered": answered,
        "sooner": sooner.sooner_than_now(answered),
        "submission_key": sending.new_key(),
    }
    template = "jobs/sooner.html#options" if request.htmx else "jobs/sooner.html"
    return render(request, template, context)


def _replace(request: HttpRequest, job: Job) -> HttpResponse:
    """Submits the job again with the chosen change; the waiting one is cancelled once Slurm
    has accepted the new one (jobs.tasks.submit_job), so there is never none and never two."""
    changes = {
        name: request.POST[name]
        for name in ("partition", "gpu_type", "time_limit")
        if request.POST.get(name)
    }
    fields = dict(job.composition.fields) | changes
    form = ComposeForm(fields)
    composed = compose(form)
    if not changes or composed is None or not composed.script:
        messages.error(request, "That change no longer makes a valid job: nothing was submitted.")
        return redirect(job)
    if sent := sending.already_sent(request):
        return sent
    with transaction.atomic():
        composition = Composition.objects.create(
            owner=request.user,
            name=f"{job.composition.name} (started sooner)"[:100],
            fields=fields,
            script=composed.script,
        )
        return sending.send(request, composition, job.account, replaces=job)
