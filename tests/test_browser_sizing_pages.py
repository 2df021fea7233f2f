"""What earlier runs used and what a job costs, in Chromium on a laptop and a phone: the composer's
figures from the user's own earlier runs and its one-click proposal, the job page's GPU-hours and
energy, and the admins' usage view, none of them wider than the screen. Built from job rows and
sample lines the poller would store, no Slurm."""

import io
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.core.management import call_command

from tests.test_browser import ARTIFACTS, browser, logged_in  # noqa: F401  (the module-wide Chromium)
from tests.test_browser_composer import SCREENS, _fits
from tests.test_gpu_energy import _finished
from tests.test_history_sizing import FORM, past_job

pytestmark = pytest.mark.browser


@pytest.fixture
def chromium(browser):  # noqa: F811  (the module-wide Chromium, by a name of this module's)
    return browser


@pytest.fixture
def alice(transactional_db, django_user_model):
    call_command("seed_guidance", stdout=io.StringIO())
    user = django_user_model.objects.create_user("alice", password="alice-password")
    user.is_staff = True  # the usage view is the admins'
    user.save()
    return user


@pytest.fixture(params=SCREENS)
def screen(request):
    width, height = SCREENS[request.param]
    return request.param, {"width": width, "height": height}


def test_earlier_runs_propose_values_that_one_click_applies(chromium, live_server, alice, screen):
    name, viewport = screen
    for n, minutes in enumerate((130, 160, 125), start=1):
        past_job(alice, n, elapsed=minutes * 60, rss=50 * 1024)
    for page in logged_in(chromium, live_server, "/jobs/new/", 15_000, viewport):
        page.goto(f"/jobs/new/?{urlencode(FORM)}")
        section = page.get_by_text("Last 3 runs:").first
        section.wait_for()
        assert "at most 2 h 40 of 12 h" in section.inner_text()
        page.get_by_role("button", name="Use these values").click()
        page.wait_for_function(
            "document.getElementById('script-text').value.includes('# From earlier runs')"
        )
        assert page.input_value("input[name=time_limit]") != ""
        # The runs took 2 h 40 at most: the duration follows, so no warning stands against it.
        assert page.input_value("input[name=hours]") == "2.67"
        assert "is shorter than the 12 h the job needs" not in page.inner_text("body")
        page.screenshot(path=ARTIFACTS / f"composer-history-{name}.png", full_page=True)
        _fits(page)


def test_gpu_hours_and_energy_show_on_the_job_page_and_the_usage_view(
    chromium, live_server, alice, screen
):
    name, viewport = screen
    job = past_job(alice, 1)
    job.gpu_devices.all().delete()  # its GPUs are those the samples below name
    job = _finished(job)
    for page in logged_in(chromium, live_server, job.get_absolute_url(), 15_000, viewport):
        page.get_by_text("kWh").first.wait_for()
        assert "GPU-hours used of" in page.inner_text("body"), page.inner_text("body")[:3000]
        page.screenshot(path=ARTIFACTS / f"job-energy-{name}.png", full_page=True)
        _fits(page)
        start = (job.started - timedelta(days=1)).date()
        page.goto(f"/jobs/usage/?start={start}")
        page.get_by_text("GPU-hours requested, used and energy").first.wait_for()
        page.screenshot(path=ARTIFACTS / f"usage-energy-{name}.png", full_page=True)
        _fits(page)
