"""An agent's plan, in Chromium on a laptop and a phone: the user makes a token that may only
compose, the agent (the MCP SDK's own client with that token) plans a job and asks to submit it,
and nothing reaches the cluster until the user reviews the plan and submits it; the job's page
then says where it came from."""

import io
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core.management import call_command

from guidance.models import Cluster
from jobs.models import Job
from tests.test_browser import ARTIFACTS, browser, logged_in  # noqa: F401  (the module-wide Chromium)
from tests.test_browser_composer import _fits
from tests.test_browser_sizing_pages import screen  # noqa: F401  (laptop and phone)
from tests.test_job_pages import _account
from tests.test_mcp import answer, run
from tests.test_plans import GOOD

pytestmark = pytest.mark.browser


@pytest.fixture
def chromium(browser):  # noqa: F811  (the module-wide Chromium, by a name of this module's)
    return browser


@pytest.fixture
def alice(transactional_db, django_user_model):
    call_command("seed_guidance", stdout=io.StringIO())
    user = django_user_model.objects.create_user("alice", password="alice-password")
    _account(user, Cluster.objects.get(slug="narval"))
    return user


def test_a_compose_only_token_plans_and_the_user_submits(
    chromium,
    live_server,
    alice,
    screen,  # noqa: F811  (the imported fixture)
    settings,
):
    settings.SOONER_BUDGET_SECONDS = 2
    name, viewport = screen
    for page in logged_in(chromium, live_server, "/settings/tokens/", 20_000, viewport):
        page.fill("input[name=name]", "coding agent")
        assert page.is_checked("input[name=scope][value=compose]")  # the least an agent needs
        page.get_by_role("button", name="Create token").click()
        secret = page.locator("#new-token").inner_text()
        assert "Also compose and check" in page.locator("td[data-scope=compose]").inner_text()
        _fits(page)  # the tokens' table, scope and all, on a phone too

        async def agent(client):
            body = {"cluster": "narval", "name": "resnet", "script": GOOD}
            planned = answer(await client.call_tool("plan_script", body))
            asked = answer(await client.call_tool("submit", {"plan_id": planned["id"]}))
            return planned, asked

        # Beside Playwright's own event loop: the agent is another program, in its own thread.
        with ThreadPoolExecutor(1) as elsewhere:
            plan, asked = elsewhere.submit(run, live_server, secret, agent).result()
        assert asked["state"] == "waiting" and not Job.objects.exists()

        page.goto("/")
        menu = page.get_by_role("button", name="Menu")
        if menu.is_visible():  # a phone's header folds its links under Menu
            menu.click()
        page.get_by_role("link", name="Plans to confirm").click()
        row = page.locator(f"tr[data-plan='{plan['id']}']")
        assert "an MCP client (test-agent" in row.inner_text()
        page.screenshot(path=ARTIFACTS / f"plans-{name}.png", full_page=True)
        _fits(page)
        row.get_by_role("link", name="Review").click()
        page.get_by_text("6 GPU-hours").first.wait_for()
        page.screenshot(path=ARTIFACTS / f"plan-{name}.png", full_page=True)
        _fits(page)
        page.get_by_role("button", name="Submit it").click()
        origin = page.locator(".job-origin")
        origin.wait_for()
        assert "an MCP client (test-agent" in origin.inner_text()
        assert "with your API token “coding agent”" in origin.inner_text()
        assert Job.objects.count() == 1
        page.screenshot(path=ARTIFACTS / f"plan-job-{name}.png", full_page=True)
        _fits(page)
        Job.objects.all().delete()  # the phone's run makes its own
