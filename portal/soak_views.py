"""Test only: routed when SOAK_HOOKS is on (tests/test_soak.py), never in production."""

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from portal.tasks import soak_mark

MOST_PER_REQUEST = 100


@csrf_exempt  # the test posts without a session; the route exists only while soak testing
@require_POST
def soak_enqueue(request: HttpRequest) -> HttpResponse:
    """Sends ?count= soak_mark tasks from the web process, as a view queues real work."""
    try:
        count = int(request.GET.get("count", "1"))
    except ValueError:
        count = 0
    if not 1 <= count <= MOST_PER_REQUEST:
        return HttpResponse(f"count must be 1 to {MOST_PER_REQUEST}", status=400)
    for _ in range(count):
        soak_mark.delay("web")
    return HttpResponse(str(count), content_type="text/plain")
