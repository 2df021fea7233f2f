"""django-axes' answer to a locked-out login, on the portal's login page and the admin's alike
(AXES_LOCKOUT_CALLABLE): the page that says why and until when, and Retry-After for clients."""

import math

from axes.helpers import get_client_username, get_cool_off, get_failure_limit
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone


def locked_out(request: HttpRequest, original_response, credentials: dict | None) -> HttpResponse:
    # Each refused try during the lockout starts the cool-off again
    # (AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT), so from this answer all of it is left.
    cool_off = get_cool_off(request)
    context = {
        "failure_limit": get_failure_limit(request, credentials),
        "username": get_client_username(request, credentials) or "",
        "cooloff_timedelta": cool_off,
        "retry_at": timezone.now() + cool_off if cool_off else None,
    }
    response = render(request, "registration/locked_out.html", context, status=429)
    if cool_off:
        response["Retry-After"] = str(math.ceil(cool_off.total_seconds()))  # RFC 9110: seconds
    return response
