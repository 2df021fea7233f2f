"""Refuses a request whose address or values hold a NUL character, with 400 and words.

PostgreSQL can neither store nor look up text with a NUL: any such value that reached a query
(a filter, a template's slug) was a 500. An address with one is refused before anything reads it.
Values are refused before the view runs, unless the view checks them field by field
(guidance.nul.checks_nul_per_field): a form's page then says so beside the field and keeps the
rest of what was typed. JSON bodies are the API's: its schemas refuse NUL (422).
"""

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

from guidance.nul import NUL

FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
SAID = "The request holds a NUL character (\\0), which no field takes: remove it and try again."


def _values_hold_nul(request: HttpRequest) -> bool:
    # POST is read only for forms: the API's JSON body stays unread for its own parser.
    forms = [request.POST] if request.content_type in FORM_TYPES else []
    for data in (request.GET, *forms):
        for key, values in data.lists():
            if NUL in key or any(NUL in value for value in values):
                return True
    return False


def _refused(request: HttpRequest) -> HttpResponse:
    if request.path.startswith("/api/"):  # the API answers in its one shape of errors
        return JsonResponse({"detail": SAID}, status=400)
    return HttpResponseBadRequest(SAID, content_type="text/plain; charset=utf-8")


class RefuseNulCharacters:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if NUL in request.path:
            return _refused(request)
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs):
        if getattr(view_func, "checks_nul_per_field", False):
            return None
        return _refused(request) if _values_hold_nul(request) else None
