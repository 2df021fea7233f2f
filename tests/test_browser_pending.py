"""In a real headless Chromium: a waiting job's page follows why it waits and when it should
start as the polls change them, without a reload."""

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from guidance.models import Cluster
from jobs.models import Job, JobState
from tests.test_browser import ARTIFACTS, browser, logged_in  # noqa: F401  (a fixture)
from tests.test_job_pages import _account


@pytest.fixture
def job(live_server, transactional_db, django_user_model):
    call_command("seed_guidance", stdout=io.StringIO())
    user = django_user_model.objects.create_user("alice", password="alice-password")
    return Job.objects.create(
        owner=user,
        account=_account(user, Cluster.objects.get(slug="narval")),
        name="resnet",
        script="#!/bin/bash\necho hi\n",
        slurm_id="4242",
        state=JobState.PENDING,
        reason="Priority",
        partition="gpu-a100",
    )


@pytest.fixture
def page(browser, live_server, job):  # noqa: F811
    yield from logged_in(browser, live_server, f"/jobs/{job.pk}/")


def test_the_page_follows_why_the_job_waits_and_when_it_starts(page, job):
    assert page.is_visible("text=Jobs with a higher priority are ahead of it")
    assert page.is_visible("text=Slurm has not estimated a start yet.")
    page.evaluate("window.notReloaded = true")

    # The next polls: it is next in line, Slurm has an estimate, and its place is known.
    job.reason = "Resources"
    job.expected_start = timezone.now() + timedelta(minutes=42, seconds=20)
    job.ahead_in_queue = 0
    job.save()
    page.wait_for_selector("text=It is next in line")
    assert page.is_visible("text=in about 42 min")
    assert page.is_visible("text=No pending job in gpu-a100 comes before it by priority.")
    assert page.inner_text("small.reason-code") == "Resources"
    assert page.evaluate("window.notReloaded") is True
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "job-pending.png", full_page=True)

    job.state, job.reason, job.expected_start = JobState.RUNNING, "", None
    job.save()
    page.wait_for_selector("text=The script is running on its nodes.")
    assert not page.is_visible("text=It is next in line")
