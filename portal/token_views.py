"""The API tokens settings page: create a token (shown once), list and revoke them."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from guidance.nul import checks_nul_per_field
from jobs.models import TokenAction
from portal.models import ApiToken, Scope

RECENT_ACTIONS = 100


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=100, help_text="What the token is for, e.g. the laptop or script that uses it."
    )
    scope = forms.ChoiceField(
        label="It may",
        choices=Scope.choices,
        initial=Scope.COMPOSE,
        widget=forms.RadioSelect,
        help_text="Give a program no more than its part: a coding agent that writes and checks "
        "scripts needs no right to submit them.",
        error_messages={"required": "Choose what the token may do."},
    )


def _get_token_for_user(request: HttpRequest, pk: int) -> ApiToken:
    # Someone else's token, or a revoked one, is not there as far as this user can tell.
    return get_object_or_404(ApiToken, pk=pk, user=request.user, revoked=None)


# Where a new token's secret waits between the POST that made it and the one page that shows it.
NEW_TOKEN = "new_api_token"


@checks_nul_per_field
@login_required
@require_http_methods(["GET", "POST"])
@never_cache  # the page that shows a new token must not be kept by a browser or a proxy
def tokens(request: HttpRequest) -> HttpResponse:
    form = TokenForm(request.POST or None)
    if form.is_valid():
        data = form.cleaned_data
        created, secret = ApiToken.issue(request.user, data["name"], Scope(data["scope"]))
        # Redirected, so that reloading the page does not send the form again and make a second
        # token. The secret rides in the server-side session for that one request only: the GET
        # below pops it, so it is shown once.
        request.session[NEW_TOKEN] = {"pk": created.pk, "secret": secret}
        return redirect("tokens")
    new = request.session.pop(NEW_TOKEN, None) if request.method == "GET" else None
    created = new and ApiToken.objects.filter(pk=new["pk"], user=request.user).first()
    ctx = {
        "form": form,
        "tokens": ApiToken.objects.filter(user=request.user, revoked=None),
        "created": created,
        "secret": new["secret"] if created else None,
        "api_url": request.build_absolute_uri(reverse("api:recommendation")),
        "schema_url": reverse("api:openapi-json"),
        "docs_url": reverse("api:openapi-view"),
        "actions": TokenAction.objects.filter(owner=request.user).exists(),
    }
    return render(request, "portal/tokens.html", ctx)


@login_required
@require_POST
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = _get_token_for_user(request, pk)
    token.revoke()
    messages.success(request, f"Revoked the token “{token.name}”: it no longer works.")
    return redirect("tokens")


@login_required
@require_http_methods(["GET", "HEAD"])
def token_actions(request: HttpRequest) -> HttpResponse:
    """What programs did with the user's tokens, newest first: plans, submissions, cancels."""
    actions = TokenAction.objects.filter(owner=request.user).select_related("token", "job", "plan")
    return render(request, "portal/token_actions.html", {"actions": actions[:RECENT_ACTIONS]})
