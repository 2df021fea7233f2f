from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse


@login_required
def check(request: HttpRequest) -> HttpResponse:
    return HttpResponse("Check my script is being built.")
