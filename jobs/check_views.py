from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from jobs.check_forms import ScriptCheckForm


@login_required
@require_http_methods(["GET", "POST"])
def check(request: HttpRequest) -> HttpResponse:
    result = None
    if request.method == "POST":
        form = ScriptCheckForm(request.POST, request.FILES)
        if form.is_valid():
            result = form.check()
    else:
        form = ScriptCheckForm(initial={"cluster": request.GET.get("cluster")})
    return render(request, "jobs/check.html", {"form": form, "result": result})
