""" "Where should this run?" on the composer: the job being composed, ranked over the user's own
logins (jobs.compose.where), and one click to compose it on another of them."""

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_safe

from jobs.compose import where
from jobs.models import ClusterAccount


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def where_to_run(request: HttpRequest) -> HttpResponse:
    """The composer's button posts its fields here (htmx swaps in the ranking); without
    JavaScript the same view answers with a page of its own, by POST or GET."""
    fields = where.job_fields(request.POST if request.method == "POST" else request.GET)
    ranked = where.rank(request.user, fields) if fields.get("cluster") else []
    context = {"ranked": ranked, "asked": urlencode(fields), "current": fields.get("cluster", "")}
    template = "jobs/where.html#ranking" if request.htmx else "jobs/where.html"
    return render(request, template, context)


@login_required
@require_safe
def compose_there(request: HttpRequest) -> HttpResponse:
    """The composer again with the same fields on the cluster `to` (one of the user's logins'),
    with what did not carry dropped or defaulted again, each change said on the page."""
    account = get_object_or_404(
        ClusterAccount.objects.select_related("cluster"),
        owner=request.user,
        cluster__slug=request.GET.get("to", ""),
    )
    moved, changes = where.retarget(where.job_fields(request.GET), account.cluster)
    messages.info(request, f"The job is now composed for {account.cluster.name}.")
    for change in changes:
        messages.warning(request, change)
    return redirect(f"{reverse('jobs:compose')}?{urlencode(moved)}")
