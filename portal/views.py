from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe


@login_required
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "home.html")


@require_safe
def healthz(request: HttpRequest) -> HttpResponse:
    # No login and no database query: probes only ask whether the process serves requests.
    return HttpResponse("ok", content_type="text/plain")
