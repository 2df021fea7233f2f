from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from guidance.models import Cluster
from jobs.compose import sending
from jobs.models import Composition, Job, JobState
from jobs.views import stop_polling

ACTIVE_SHOWN = 10
COMPOSITIONS_SHOWN = 5


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    """What the portal does, for a visitor; for a user, the day's start: a new job or a script
    check, their running and waiting jobs (live), recent compositions, their clusters' guidance."""
    if not request.user.is_authenticated:
        return render(request, "home.html")
    active = list(
        Job.objects.filter(owner=request.user, state__in=JobState.active())
        .select_related("account__cluster")
        .order_by("-submitted", "-created")[:ACTIVE_SHOWN]
    )
    if request.htmx:
        response = render(request, "home.html#active", {"active": active})
        return response if active else stop_polling(response)
    mine = list(Cluster.objects.filter(clusteraccount__owner=request.user).order_by("name"))
    compositions = list(Composition.objects.filter(owner=request.user)[:COMPOSITIONS_SHOWN])
    for composition in compositions:  # each "Submit again" makes one job, however often clicked
        composition.submission_key = sending.new_key()
    ctx = {
        "active": active,
        "compositions": compositions,
        "clusters": mine or Cluster.objects.order_by("name"),
        "has_login": bool(mine),
    }
    return render(request, "home.html", ctx)


@require_safe
def healthz(request: HttpRequest) -> HttpResponse:
    # No login and no database query: probes only ask whether the process serves requests.
    return HttpResponse("ok", content_type="text/plain")
