"""Refuses a request whose address or form values hold a NUL character, with 400 and words.

PostgreSQL can neither store nor look up text with a NUL: any such value that reached a query
(a filter, a template's slug) was a 500. No field of the portal has a use for one, so the request
is refused before any view sees it. JSON bodies are the API's: its schemas refuse NUL (422).
"""

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

NUL = "\x00"
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
SAID = "The request holds a NUL character (\\0), which no field takes: remove it and try again."


def _holds_nul(request: HttpRequest) -> bool:
    if NUL in request.path:
        return True
    # POST is read only for forms: the API's JSON body stays unread for its own parser.
    forms = [request.POST] if request.content_type in FORM_TYPES else []
    for data in (request.GET, *forms):
        for key, values in data.lists():
            if NUL in key or any(NUL in value for value in values):
                return True
    return False


class RefuseNulCharacters:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if _holds_nul(request):
            if request.path.startswith("/api/"):  # the API answers in its one shape of errors
                return JsonResponse({"detail": SAID}, status=400)
            return HttpResponseBadRequest(SAID, content_type="text/plain; charset=utf-8")
        return self.get_response(request)
