"""Guessing passwords: after LOGIN_FAILURE_LIMIT wrong ones for a name from one address, even the
right one is refused for LOGIN_COOLOFF_MINUTES, on the login page and the admin's alike, with a
page that says why and how long; others, and the same name from elsewhere, still log in."""

import pytest
from django.conf import settings

PAGES = ["/accounts/login/", "/admin/login/"]


def _try(client, page: str, username: str, password: str, address: str = "203.0.113.7"):
    return client.post(page, {"username": username, "password": password}, REMOTE_ADDR=address)


@pytest.mark.parametrize("page", PAGES)
def test_after_five_wrong_passwords_even_the_right_one_is_refused(client, staff, page):
    answers = [_try(client, page, staff.username, "wrong").status_code for _ in range(5)]
    assert answers == [200, 200, 200, 200, 429]  # the form again, then the lockout
    locked = _try(client, page, staff.username, "root-password")
    assert locked.status_code == 429
    said = locked.content.decode()
    assert "Too many failed logins" in said
    assert "are refused for 15 minutes" in " ".join(said.split())
    assert "Try again after " in said
    assert "_auth_user_id" not in client.session


@pytest.mark.parametrize("page", PAGES)
def test_the_lockout_says_in_retry_after_when_to_try_again(client, staff, page):
    for _ in range(5):
        answer = _try(client, page, staff.username, "wrong")
    cool_off = settings.AXES_COOLOFF_TIME.total_seconds()
    assert answer.status_code == 429
    assert answer["Retry-After"].isdigit()  # whole seconds (RFC 9110)
    assert 0 < int(answer["Retry-After"]) <= cool_off
    assert int(_try(client, page, staff.username, "root-password")["Retry-After"]) <= cool_off


def test_a_lockout_is_for_that_name_from_that_address(client, staff, user):
    for _ in range(5):
        _try(client, PAGES[0], staff.username, "wrong")
    assert _try(client, PAGES[0], user.username, "alice-password").status_code == 302
    client.logout()
    elsewhere = _try(client, PAGES[0], staff.username, "root-password", address="198.51.100.2")
    assert elsewhere.status_code == 302


def test_a_right_password_before_the_limit_starts_the_count_again(client, user):
    for _ in range(4):
        _try(client, PAGES[0], user.username, "wrong")
    assert _try(client, PAGES[0], user.username, "alice-password").status_code == 302
    client.logout()
    for _ in range(4):
        _try(client, PAGES[0], user.username, "wrong")
    assert _try(client, PAGES[0], user.username, "alice-password").status_code == 302
