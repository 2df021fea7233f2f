"""In Chromium, the user's own settings: a new API token survives a reload without a second one
being made, the API documentation is one click from the tokens page and the footer, and the
password is changed from the account menu on a page in the portal's look."""

import io

import pytest
from django.core.management import call_command

from portal.models import ApiToken
from tests.test_browser import ARTIFACTS, browser, logged_in  # noqa: F401  (the module-wide Chromium)


@pytest.fixture
def alice(transactional_db, django_user_model):
    call_command("seed_guidance", stdout=io.StringIO())
    return django_user_model.objects.create_user("alice", password="alice-password")


@pytest.fixture
def page(browser, live_server, alice):  # noqa: F811
    yield from logged_in(browser, live_server, "/")


def test_reloading_after_creating_a_token_makes_no_second_one(page, alice):
    page.get_by_role("link", name="API tokens").first.click()
    page.fill("input[name=name]", "laptop")
    page.get_by_role("button", name="Create token").click()
    secret = page.locator("#new-token").inner_text()
    assert ApiToken.find(secret).user == alice
    dialogs = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message) or dialog.dismiss())
    page.reload()
    assert not dialogs, "the reload asked to send the form again"
    assert page.locator("#new-token").count() == 0
    assert ApiToken.objects.filter(user=alice).count() == 1
    assert page.locator("td", has_text="laptop").count() == 1


def test_the_api_docs_are_linked_from_the_tokens_page_and_the_footer(page):
    page.goto("/settings/tokens/")
    page.get_by_role("link", name="The API's documentation").click()
    page.wait_for_url("**/api/v1/docs")
    # Swagger UI, from the portal's own static files, lists the API's endpoints.
    page.get_by_text("/api/v1/recommendation").first.wait_for()
    assert "GPU portal API" in page.inner_text("body")
    page.goto("/guidance/")
    page.locator("footer").get_by_role("link", name="API documentation").click()
    page.wait_for_url("**/api/v1/docs")


def test_the_password_is_changed_from_the_menu_in_the_portals_look(page, alice):
    page.locator(".account").get_by_role("link", name="Password").click()
    page.wait_for_url("**/accounts/password_change/")
    assert page.title() == "Change your password · GPU portal"
    assert page.locator(".site-header").is_visible()
    assert page.locator("#header, #site-name").count() == 0  # the admin's own header
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "password-change.png", full_page=True)
    page.fill("input[name=old_password]", "alice-password")
    page.fill("input[name=new_password1]", "a-new-long-password")
    page.fill("input[name=new_password2]", "a-new-long-password")
    page.get_by_role("button", name="Change my password").click()
    page.wait_for_url("**/accounts/password_change/done/")
    assert page.get_by_role("heading", name="Password changed").is_visible()
    assert page.locator(".account").get_by_text("alice").is_visible()  # still logged in
    alice.refresh_from_db()
    assert alice.check_password("a-new-long-password")
