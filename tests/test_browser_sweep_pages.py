"""A sweep's pages in Chromium on a laptop (1280x800) and a phone (390x844): the composer counts
the runs and their GPU-hours as the grid is typed, and the job page's runs table sorts by a
parameter and fits the screen. Built from the composer's own script and the poller's task rows,
no Slurm (tests/test_browser_sweep.py runs one on the dev cluster)."""

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from guidance.models import Cluster
from jobs.compose.forms import ComposeForm
from jobs.compose.from_form import compose
from jobs.models import Composition, Job, JobState, JobTask
from tests.test_browser import ARTIFACTS, browser, logged_in  # noqa: F401  (the module-wide Chromium)
from tests.test_browser_composer import SCREENS, _fits
from tests.test_job_pages import _account
from tests.test_sweep_runs import SWEEP

pytestmark = pytest.mark.browser


@pytest.fixture
def alice(transactional_db, django_user_model):
    call_command("seed_guidance", stdout=io.StringIO())
    return django_user_model.objects.create_user("alice", password="alice-password")


@pytest.fixture
def chromium(browser):  # noqa: F811  (the module-wide Chromium, by a name of this module's)
    return browser


@pytest.fixture(params=SCREENS)
def screen(request):
    width, height = SCREENS[request.param]
    return request.param, {"width": width, "height": height}


def test_the_composer_counts_the_runs_and_gpu_hours_as_the_grid_is_typed(
    chromium, live_server, alice, screen
):
    name, viewport = screen
    for page in logged_in(chromium, live_server, "/jobs/new/", 15_000, viewport):
        page.select_option("select[name=cluster]", "narval")
        page.fill("input[name=account]", "def-someuser")
        page.fill("input[name=data_path]", "$PROJECT/data/set")
        page.fill("input[name=hours]", "2")
        page.fill("input[name=dataset_gb]", "5")
        page.fill("textarea[name=sweep_grid]", "lr = 0.1 0.01\nseed = 1 2 3")
        page.locator("textarea[name=sweep_grid]").blur()
        summary = page.locator("#sweep-summary")
        summary.get_by_text("6 runs", exact=True).wait_for()
        assert "12 GPU-hours" in summary.inner_text()
        assert "Running many similar jobs" in summary.inner_text()
        page.fill("textarea[name=command]", "python train.py --lr {lr} --seed {seed}")
        page.locator("textarea[name=command]").blur()
        page.wait_for_function(
            "document.getElementById('script-text').value.includes('--array=1-6')"
        )
        summary.scroll_into_view_if_needed()
        page.screenshot(path=ARTIFACTS / f"composer-sweep-{name}.png", full_page=True)
        _fits(page)


def test_the_runs_table_sorts_by_a_parameter_and_fits_the_screen(
    chromium, live_server, alice, screen
):
    name, viewport = screen
    composed = compose(ComposeForm(SWEEP | {"hours": "2"}))
    account = _account(alice, Cluster.objects.get(slug="narval"))
    composition = Composition.objects.create(
        owner=alice, name="sweep1", fields=SWEEP | {"hours": "2"}, script=composed.script
    )
    # As the poller leaves it: its tasks added up, and one task's own figures.
    job = Job.objects.create(
        owner=alice, account=account, name="sweep1", script=composed.script, slurm_id="500",
        state=JobState.FAILED, ended=timezone.now(), composition=composition, gpus=1,
        elapsed_seconds=210 * 60, time_limit_seconds=6 * 2 * 3600,
        longest_task_seconds=60 * 60, task_time_limit_seconds=2 * 3600,
    )  # fmt: skip
    ended = timezone.now() - timedelta(minutes=5)
    for number in range(1, 7):
        failed = number == 4
        JobTask.objects.create(
            job=job, task_id=str(number), slurm_id=f"500_{number}",
            state=JobState.FAILED if failed else JobState.COMPLETED, exit_code=1 if failed else 0,
            started=ended - timedelta(minutes=10 * number), ended=ended, nodes=f"ng10{number}",
        )  # fmt: skip
    for page in logged_in(chromium, live_server, job.get_absolute_url(), 15_000, viewport):
        rows = page.locator("[data-run]")
        assert rows.count() == 6
        assert "Re-run failed runs" in page.content()
        page.get_by_role("link", name="seed").first.click()
        page.wait_for_function(
            "[...document.querySelectorAll('[data-run]')].map(r => r.dataset.run).join() "
            "=== '1,4,2,5,3,6'"
        )
        page.locator("[data-run]").first.scroll_into_view_if_needed()
        page.screenshot(path=ARTIFACTS / f"job-sweep-runs-{name}.png", full_page=True)
        _fits(page)
        # The report sizes each run by its longest completed run (run 6's hour), not the sum.
        advice = page.locator("#job-efficiency")
        advice.scroll_into_view_if_needed()
        assert "1:15:00 per run instead of 2:00:00" in advice.inner_text()
        page.screenshot(path=ARTIFACTS / f"job-sweep-report-{name}.png", full_page=True)
