"""In Chromium: "Save and submit" with no login, on a cluster whose host key no admin has
confirmed yet, lands on a logins page that says why and where the composition is; an admin
follows its link to the host-key page, which reads as the portal's admin, and confirms the key
of a real sshd, after which the page offers the key."""

import io

import pytest
from django.core.management import call_command

from guidance.models import Cluster
from jobs.models import Composition
from tests.sshd import running_sshd_fixture, sshd_fixture  # noqa: F401  (the real sshd)
from tests.test_browser import ARTIFACTS, browser  # noqa: F401  (the module-wide Chromium)


@pytest.fixture
def users(transactional_db, django_user_model):
    call_command("seed_guidance", stdout=io.StringIO())
    call_command("seed_templates", stdout=io.StringIO())
    django_user_model.objects.create_user("alice", password="alice-password")
    django_user_model.objects.create_superuser("root", password="root-password")


def _log_in(browser, live_server, name: str, path: str):  # noqa: F811
    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.goto(f"/accounts/login/?next={path}")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", f"{name}-password")
    page.click("button[type=submit]")
    page.wait_for_url(f"**{path}")
    return context, page


def test_save_and_submit_without_a_login_says_why_and_keeps_the_work(
    browser,  # noqa: F811
    live_server,
    users,
):
    context, page = _log_in(
        browser, live_server, "alice", "/jobs/new/?template=pytorch-training-1gpu"
    )
    try:
        page.select_option("select[name=cluster]", "narval")
        page.fill("input[name=data_path]", "/project/def-someuser/data")
        page.fill("input[name=hours]", "12")
        page.fill("input[name=dataset_gb]", "50")
        page.wait_for_selector('[data-placement="node_local"]')
        page.get_by_role("button", name="Save and submit").click()
        page.wait_for_url("**/jobs/logins/")
        section = page.locator("section.cluster-login", has_text="Narval")
        notice = section.locator(".not-yet")
        assert notice.is_visible()
        assert "You cannot add a login on Narval yet" in notice.inner_text()
        assert "Ask the portal's admins to confirm it" in notice.inner_text()
        assert section.get_by_role("button", name="Make my key").count() == 0
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=ARTIFACTS / "logins-no-host-key.png", full_page=True)

        composition = Composition.objects.get()
        section.get_by_role("link", name=composition.name).click()
        page.wait_for_url(f"**{composition.get_absolute_url()}")
        assert page.get_by_role("button", name="Submit it").is_visible()
    finally:
        context.close()


def test_an_admin_confirms_the_host_key_from_the_logins_page(
    browser,  # noqa: F811
    live_server,
    users,
    running_sshd,
):
    Cluster.objects.filter(slug="narval").update(
        login_host="127.0.0.1", login_port=running_sshd.port
    )
    context, page = _log_in(browser, live_server, "root", "/jobs/logins/")
    try:
        section = page.locator("section.cluster-login", has_text="Narval")
        section.get_by_role("link", name="Check and confirm its host key").click()
        page.wait_for_url("**/host-key/")
        assert page.locator("#site-name").inner_text() == "GPU portal administration"
        assert page.title() == "Host key of 127.0.0.1 | GPU portal administration"
        assert "Django" not in page.locator("#header").inner_text()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=ARTIFACTS / "admin-host-key.png", full_page=True)

        page.get_by_role("button", name="Confirm and pin this key").click()
        page.wait_for_url("**/change/")
        assert Cluster.objects.get(slug="narval").host_key == running_sshd.host_key_line
        page.goto("/jobs/logins/")
        section = page.locator("section.cluster-login", has_text="Narval")
        assert section.locator(".not-yet").count() == 0
        assert section.get_by_role("button", name="Make my key").is_visible()
    finally:
        context.close()
