"""/mcp: the MCP endpoint (portal/mcp_tools.py's tools), served as an ordinary Django view.

Why a view and not a second app beside Django's: runserver, gunicorn and the tests' live server
all serve Django's WSGI handler, so a URL works the same in all three and passes through the
same middleware (host checks, the NUL guard, security headers). The SDK's Streamable HTTP app is
stateless and answers in JSON: each POST is one whole exchange, so nothing needs to outlive the
request and any worker of any process can answer the next one. The view runs it with asgiref
(Django's own bridge between sync and async code): the tools' database work is handed back to
this request's thread (sync_to_async), on its connection, inside its transaction rules.

Who asks is settled here, before the SDK sees the request: a live token (401 in the API's
words otherwise), the API's rate limit on the same counter, and last use marked."""

from typing import Any

from asgiref.sync import async_to_sync
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from mcp.server.transport_security import TransportSecuritySettings

from portal.api import UNAUTHENTICATED, PerToken, over_rate
from portal.mcp_tools import current_request, server
from portal.models import ApiToken


@csrf_exempt  # a bearer token, never a cookie: nothing a cross-site form could ride on
def mcp(request: HttpRequest) -> HttpResponse:
    token = _token(request)
    if token is None:
        response = JsonResponse({"detail": UNAUTHENTICATED}, status=401)
        response["WWW-Authenticate"] = 'Bearer realm="GPU portal MCP"'
        return response
    token.mark_used()
    request.auth = token
    throttle = PerToken()
    if not throttle.allow_request(request):
        response = JsonResponse({"detail": over_rate()}, status=429)
        response["Retry-After"] = str(max(1, round(throttle.wait() or 1)))
        return response
    try:
        body = request.body
    except RequestDataTooBig:
        return JsonResponse({"detail": "The request body is over the portal's limit."}, status=413)
    current_request.set(request)
    return async_to_sync(_exchange)(request, body)


def _token(request: HttpRequest) -> ApiToken | None:
    scheme, _, secret = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return ApiToken.find(secret.strip())


# Django has checked the Host header (ALLOWED_HOSTS) and the caller holds a token, which no
# browser sends by itself: the SDK's own guard against DNS rebinding, meant for servers on
# localhost without credentials, would only refuse the portal's real host names.
_SECURITY = TransportSecuritySettings(enable_dns_rebinding_protection=False)


async def _exchange(request: HttpRequest, body: bytes) -> HttpResponse:
    """One request through the SDK's app, its answer as Django's response."""
    # A fresh app per request: the SDK's session manager runs once per instance, and stateless
    # mode keeps nothing in it between requests.
    app = server.streamable_http_app(
        streamable_http_path=request.path,
        stateless_http=True,
        json_response=True,
        transport_security=_SECURITY,
        max_request_body_size=max(len(body), 1),
    )
    sent: dict[str, Any] = {"status": 500, "headers": [], "body": b""}
    received = False

    async def receive() -> dict[str, Any]:
        nonlocal received
        if received:
            return {"type": "http.disconnect"}
        received = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            sent["status"], sent["headers"] = message["status"], message.get("headers", [])
        elif message["type"] == "http.response.body":
            sent["body"] += message.get("body", b"")

    async with app.router.lifespan_context(app):
        await app(_scope(request), receive, send)
    response = HttpResponse(sent["body"], status=sent["status"])
    for name, value in sent["headers"]:
        response[name.decode("latin-1")] = value.decode("latin-1")
    return response


def _scope(request: HttpRequest) -> dict[str, Any]:
    port = int(request.get_port() or 80)
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode(),
        "root_path": "",
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"),
        "headers": [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in request.headers.items()
        ],
        "server": (request.get_host().rpartition(":")[0] or request.get_host(), port),
        "client": (request.META.get("REMOTE_ADDR", ""), 0),
    }
