"""API tokens: how the API authenticates, the tokens page and the create_api_token command."""

import io
import logging

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from portal.models import TOKEN_PREFIX, ApiToken
from tests.test_api import JOB, URL, _post


@pytest.fixture
def stranger(django_user_model: type[User]) -> User:
    return django_user_model.objects.create_user("mallory", password="mallory-password")


# --- Authentication ----------------------------------------------------------------------


def test_it_requires_a_token(client, seeded):
    response = _post(client, None)
    assert response.status_code == 401
    assert "Authorization: Bearer" in response.json()["detail"]
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert client.get("/api/v1/clusters").status_code == 401


@pytest.mark.parametrize(
    "header",
    [
        "Bearer gp_not-a-real-token",
        "Bearer ",
        "Bearer",
        "Token {secret}",  # the right token under the wrong scheme
        "Bearer {secret}x",
    ],
)
def test_it_rejects_a_wrong_token(client, seeded, secret, header):
    response = client.post(
        URL,
        JOB,
        content_type="application/json",
        headers={"Authorization": header.format(secret=secret)},
    )
    assert response.status_code == 401
    assert set(response.json()) == {"detail"}


def test_it_rejects_a_revoked_token(client, seeded, secret):
    ApiToken.objects.get().revoke()
    assert _post(client, secret).status_code == 401


def test_it_rejects_the_token_of_an_inactive_user(client, seeded, user, secret):
    user.is_active = False
    user.save()
    assert _post(client, secret).status_code == 401


def test_it_ignores_the_session_cookie(user_client, seeded):
    # A logged-in browser has no token: cookies alone must not authorize a cross-site POST.
    assert _post(user_client, None).status_code == 401


def test_it_never_logs_a_token(client, seeded, secret, settings, caplog):
    settings.DEBUG = True  # ninja's own HttpBearer logs unreadable headers in DEBUG
    with caplog.at_level(logging.DEBUG):
        client.post(URL, JOB, content_type="application/json", headers={"Authorization": secret})
        _post(client, secret, dataset_gb="lots")
    assert secret not in caplog.text


def test_it_records_when_a_token_was_last_used(client, seeded, secret):
    assert ApiToken.objects.get().last_used is None
    assert _post(client, secret).status_code == 200
    first = ApiToken.objects.get().last_used
    assert first is not None
    assert _post(client, secret).status_code == 200
    assert ApiToken.objects.get().last_used > first


def test_a_wrong_token_is_not_marked_used(client, seeded, secret):
    _post(client, secret + "x")
    assert ApiToken.objects.get().last_used is None


# --- The tokens page ---------------------------------------------------------------------


def test_the_tokens_page_requires_login(client, db):
    response = client.get(reverse("tokens"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_the_nav_links_to_the_tokens_page(user_client):
    assert f'href="{reverse("tokens")}"' in user_client.get(reverse("home")).text


def test_it_creates_a_token_shown_once_that_works(user_client, seeded, user):
    made = user_client.post(reverse("tokens"), {"name": "cluster scripts", "scope": "compose"})
    # Redirected, so that reloading the page that shows the token does not make another.
    assert made.status_code == 302 and made["Location"] == reverse("tokens")
    response = user_client.get(made["Location"])
    assert "no-store" in response["Cache-Control"]
    token = ApiToken.objects.get(user=user)
    assert token.name == "cluster scripts"
    page = response.text
    secret = page.split('<code id="new-token">', 1)[1].split("</code>")[0]
    assert secret.startswith(TOKEN_PREFIX)
    assert secret.startswith(token.prefix)
    assert "will not be shown again" in page
    assert f'curl -H "Authorization: Bearer {secret}"' in page
    assert "http://testserver/api/v1/recommendation" in page

    # A client without the browser's session: the API needs the token alone.
    assert _post(Client(), secret).status_code == 200

    later = user_client.get(reverse("tokens")).text
    assert "cluster scripts" in later
    assert token.prefix in later
    assert secret not in later
    assert token.token_hash not in later
    assert secret not in str(dict(user_client.session))  # gone from the session once shown


def test_a_reload_after_creating_a_token_makes_no_second_one(user_client, user):
    response = user_client.post(reverse("tokens"), {"name": "laptop", "scope": "read"}, follow=True)
    assert '<code id="new-token">' in response.text
    # What a browser's reload does after a redirect: GET the page it landed on.
    again = user_client.get(response.redirect_chain[-1][0])
    assert '<code id="new-token">' not in again.text
    assert ApiToken.objects.filter(user=user).count() == 1


def test_the_new_secret_is_not_shown_to_another_user(user_client, user, stranger):
    # A session holding a token it was not issued to (it cannot happen through the page) shows
    # nothing: the token must be this user's.
    theirs, secret = ApiToken.issue(stranger, "theirs")
    session = user_client.session
    session["new_api_token"] = {"pk": theirs.pk, "secret": secret}
    session.save()
    assert secret not in user_client.get(reverse("tokens")).text


def test_the_tokens_page_links_to_the_api_docs(user_client):
    page = user_client.get(reverse("tokens")).text
    assert f'href="{reverse("api:openapi-view")}"' in page


def test_it_stores_only_the_hash(user):
    token, secret = ApiToken.issue(user, "laptop")
    assert secret not in {token.token_hash, token.prefix, token.name}
    assert len(secret) >= 40
    assert len(token.token_hash) == 64
    assert ApiToken.find(secret) == token


def test_it_lists_only_the_users_live_tokens(user_client, user, stranger):
    ApiToken.issue(user, "mine")
    ApiToken.issue(stranger, "theirs")
    ApiToken.issue(user, "old")[0].revoke()
    page = user_client.get(reverse("tokens")).text
    assert "<td>mine</td>" in page
    assert "<td>theirs</td>" not in page
    assert "<td>old</td>" not in page


def test_it_requires_a_name(user_client, user):
    response = user_client.post(reverse("tokens"), {"name": ""})
    assert response.status_code == 200
    assert "This field is required" in response.text
    assert not ApiToken.objects.exists()


def test_it_revokes_a_token(user_client, seeded, user, secret):
    token = ApiToken.objects.get()
    response = user_client.post(reverse("token_revoke", args=[token.pk]))
    assert response.status_code == 302
    assert response["Location"] == reverse("tokens")
    token.refresh_from_db()
    assert token.revoked is not None
    assert _post(Client(), secret).status_code == 401
    assert "<td>laptop</td>" not in user_client.get(reverse("tokens")).text


def test_revoke_rejects_get(user_client, secret):
    token = ApiToken.objects.get()
    assert user_client.get(reverse("token_revoke", args=[token.pk])).status_code == 405
    token.refresh_from_db()
    assert token.revoked is None


def test_revoke_requires_the_csrf_token(user):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    token, _ = ApiToken.issue(user, "laptop")
    assert browser.post(reverse("token_revoke", args=[token.pk])).status_code == 403
    token.refresh_from_db()
    assert token.revoked is None


def test_it_cannot_revoke_someone_elses_token(user_client, stranger):
    token, _ = ApiToken.issue(stranger, "theirs")
    assert user_client.post(reverse("token_revoke", args=[token.pk])).status_code == 404
    token.refresh_from_db()
    assert token.revoked is None


# --- The create_api_token command --------------------------------------------------------


def test_the_command_prints_a_working_token(client, seeded, user):
    out = io.StringIO()
    call_command("create_api_token", "alice", "--name", "ci", stdout=out)
    secret = out.getvalue().strip()
    assert "\n" not in secret
    assert secret.startswith(TOKEN_PREFIX)
    assert ApiToken.objects.get().name == "ci"
    assert _post(client, secret).status_code == 200


def test_the_command_names_an_unknown_user(db):
    with pytest.raises(CommandError, match="No user named 'bob'"):
        call_command("create_api_token", "bob", stdout=io.StringIO())
    assert not ApiToken.objects.exists()


def test_the_command_refuses_an_inactive_user(user):
    user.is_active = False
    user.save()
    with pytest.raises(CommandError, match="inactive"):
        call_command("create_api_token", "alice", stdout=io.StringIO())
