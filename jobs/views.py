from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse


@login_required
def compose(request: HttpRequest) -> HttpResponse:
    return HttpResponse("The composer is being built.")
