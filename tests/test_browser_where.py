""" "Where should this run?" in Chromium, on a laptop and a phone: the composer's button puts the
ranking under it without leaving the page, and "Compose it there" opens the composer on the other
cluster with the script planned for it. The seeded clusters cannot be reached from here, so each
start is "unknown", said within the budget."""

import time
from urllib.parse import urlencode

import pytest

from tests.test_browser import ARTIFACTS, browser, logged_in  # noqa: F401  (the module-wide Chromium)
from tests.test_browser_composer import _fits, alice  # noqa: F401  (alice, a fixture)
from tests.test_browser_sizing_pages import screen  # noqa: F401  (laptop and phone)
from tests.test_where import LONG, _login

pytestmark = pytest.mark.browser


@pytest.fixture
def chromium(browser):  # noqa: F811  (the module-wide Chromium, by a name of this module's)
    return browser


def test_the_ranking_comes_in_place_and_one_click_moves_the_job(
    chromium,
    live_server,
    alice,  # noqa: F811  (the imported fixture)
    screen,  # noqa: F811  (the imported fixture)
    settings,
):
    settings.SOONER_BUDGET_SECONDS = 2
    name, viewport = screen
    for slug in ("narval", "graham"):
        _login(alice, slug)
    for page in logged_in(chromium, live_server, "/jobs/new/", 20_000, viewport):
        page.goto(f"/jobs/new/?{urlencode(LONG)}")  # 200 h on a100s, composed for Narval
        page.evaluate("window.stayed = true")
        began = time.monotonic()
        page.get_by_role("button", name="Where should this run?").click()
        ranking = page.locator("#where-answer table.where")
        ranking.wait_for()
        assert time.monotonic() - began < 10
        assert page.evaluate("window.stayed === true"), "the page reloaded"
        rows = ranking.locator("tbody tr")
        # Graham takes 200 h; Narval's a100 nodes take 7 days at most, so it comes second.
        assert [rows.nth(i).get_attribute("data-cluster") for i in range(2)] == [
            "graham",
            "narval",
        ]
        narval = ranking.locator("tr[data-cluster=narval]")
        assert "No" in narval.inner_text() and "composed here" in narval.inner_text()
        assert "unknown" in ranking.locator("tr[data-cluster=graham]").inner_text()
        page.screenshot(path=ARTIFACTS / f"where-ranking-{name}.png", full_page=True)
        _fits(page)

        ranking.get_by_role("link", name="Compose it there").click()
        page.get_by_text("The job is now composed for Graham").wait_for()
        assert page.input_value("select[name=cluster]") == "graham"
        assert page.input_value("input[name=hours]") == "200"
        page.wait_for_function("document.getElementById('script-text').value.includes('--time=')")
        script = page.input_value("#script-text")
        assert "written by the GPU portal for Graham" in script
        assert "#SBATCH --time=8-08:00:00" in script  # 200 h, which Narval could not give
        page.screenshot(path=ARTIFACTS / f"where-moved-{name}.png", full_page=True)
        _fits(page)
