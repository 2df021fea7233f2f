"""In a real headless Chromium: the job page's GPU section follows the job live, and its report's
button saves the next run."""

import io

import pytest
from django.core.management import call_command
from django.utils import timezone

from jobs.models import JobState
from tests.test_browser import ARTIFACTS, browser, logged_in  # noqa: F401  (a fixture)
from tests.test_efficiency import add_samples, resnet_job


@pytest.fixture
def job(live_server, transactional_db, django_user_model, settings):
    settings.GPU_WARMUP_SECONDS = 2 * 3600
    settings.SAMPLE_SECONDS = 2
    call_command("seed_guidance", stdout=io.StringIO())
    user = django_user_model.objects.create_user("alice", password="alice-password")
    job = resnet_job(user, composition=True)
    add_samples(job, 0, 30.0)
    add_samples(job, 1, 0.0)
    return job


@pytest.fixture
def page(browser, live_server, job):  # noqa: F811
    yield from logged_in(browser, live_server, f"/jobs/{job.pk}/")


def test_the_gpu_section_follows_the_job_and_saves_the_next_run(page, job, settings):
    chart = page.locator("svg.gpu-chart")
    assert chart.bounding_box()["height"] > 150
    assert page.locator("svg.gpu-chart .gpu-series").count() == 2
    assert page.is_visible("text=Warnings start after the first 120 minutes")
    page.evaluate("window.notReloaded = true")

    settings.GPU_WARMUP_SECONDS = 300  # the warm-up is over: the next refresh warns
    page.wait_for_selector("text=GPU 1 on a100-2 has done nothing for 55 minutes")
    assert page.is_visible("text=Your 2 GPUs are 15% busy on average")

    job.state, job.ended = JobState.COMPLETED, timezone.now()
    job.elapsed_seconds, job.time_limit_seconds = 3600, 4 * 3600
    job.save()
    page.wait_for_selector("#job-efficiency")
    assert page.evaluate("window.notReloaded") is True
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "job-gpus.png", full_page=True)

    page.click("text=Save as the next run")
    page.wait_for_selector("text=resnet (next run)")
    assert "#SBATCH --time=0-01:15:00" in page.inner_text("pre.script")
