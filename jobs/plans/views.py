"""The pages where the user gives their word on what their programs planned: the plans waiting
for it, each plan whole (script, findings, GPU-hours, start estimate), confirm or decline."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import F
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from jobs.models import Plan
from jobs.plans import deciding
from jobs.plans.making import PlanRefused

RECENT = 20


@login_required
@require_safe
def plans(request: HttpRequest) -> HttpResponse:
    related = ("account__cluster", "token")
    # Asked first: a program that may only compose leaves its plans for the user to find.
    asked_first = (F("asked").desc(nulls_last=True), "-created")
    undecided = list(Plan.undecided(request.user).select_related(*related).order_by(*asked_first))
    mine = Plan.objects.filter(owner=request.user).select_related(*related)
    others = mine.exclude(pk__in=[plan.pk for plan in undecided])[:RECENT]
    context = {"waiting": undecided, "others": others, "minutes": settings.PLAN_MINUTES}
    return render(request, "jobs/plans.html", context)


@login_required
@require_safe
def plan(request: HttpRequest, pk) -> HttpResponse:
    return render(request, "jobs/plan.html", {"plan": _find(request, pk)})


@login_required
@require_POST
def plan_confirm(request: HttpRequest, pk) -> HttpResponse:
    found = _find(request, pk)
    try:
        job = deciding.confirm(found.pk, request.user)
    except PlanRefused as refused:
        messages.error(request, refused.message)
        return redirect(found)
    messages.success(request, f"Submitted {job.name}: it goes to Slurm now.")
    return redirect(job)


@login_required
@require_POST
def plan_decline(request: HttpRequest, pk) -> HttpResponse:
    found = deciding.decline(_find(request, pk).pk, request.user)
    messages.info(request, f"Declined {found.name}: nothing was submitted.")
    return redirect("jobs:plans")


def _find(request: HttpRequest, pk) -> Plan:
    try:
        return deciding.find(pk, request.user)
    except PlanRefused:
        raise Http404("No such plan.") from None
