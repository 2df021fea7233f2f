"""In a real headless Chromium, with a real Slurm job: while its page is open, the header's
notification count follows the job's start and end without a reload, and the browser's own
notifications (the Web Notifications API, stubbed to record what it is asked to show) show each
once. The test process polls the cluster, as beat would."""

import io
import time

import pytest
from django.core.management import call_command

from jobs import tasks
from jobs.models import ClusterAccount, Job, JobState, NotificationDefaults
from tests.test_browser import ARTIFACTS, browser  # noqa: F401  (a fixture)
from tests.test_jobs_cluster import _job, _submit

# Granted, and recording: headless Chromium shows nothing a test could see.
RECORDING_NOTIFICATIONS = """
window.shownNotifications = [];
window.Notification = class {
  static permission = "granted";
  static requestPermission() { return Promise.resolve("granted"); }
  constructor(title, options) { window.shownNotifications.push({title, ...options}); }
  close() {}
};
"""


@pytest.fixture
def job(devcluster, live_server, transactional_db, django_user_model, settings) -> Job:
    settings.NOTIFICATION_REFRESH_SECONDS = 1
    call_command("seed_guidance", stdout=io.StringIO())
    user = django_user_model.objects.create_user("alice", password="alice-password")
    NotificationDefaults.objects.create(owner=user, on_start=True, by_email=False)
    call_command("register_devcluster", "alice", stdout=io.StringIO())
    account = ClusterAccount.objects.get(owner=user, cluster__slug="local")
    return _submit(_job(account, "sleep 6"))


@pytest.fixture
def page(browser, live_server, job):  # noqa: F811
    context = browser.new_context(base_url=live_server.url)
    context.add_init_script(RECORDING_NOTIFICATIONS)
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.goto(f"/accounts/login/?next=/jobs/{job.pk}/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "alice-password")
    page.click("button[type=submit]")
    page.wait_for_url(f"**/jobs/{job.pk}/")
    yield page
    context.close()


def _poll_until(page, job: Job, done, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not done(job):
        assert time.monotonic() < deadline, f"still {job.state} after {timeout} s"
        tasks.poll_clusters.apply()
        job.refresh_from_db()
        page.wait_for_timeout(500)  # the page goes on polling meanwhile


def test_the_count_and_the_browser_follow_the_job_while_its_page_is_open(page, job):
    page.wait_for_selector("#notify-count[data-push-url]")
    assert page.inner_text("#notify-count") == "Notifications"
    page.evaluate("window.notReloaded = true")

    _poll_until(page, job, lambda j: j.state != JobState.PENDING)
    page.wait_for_selector("#notify-count .badge >> text=1")
    page.wait_for_function("window.shownNotifications.length === 1")

    _poll_until(page, job, lambda j: j.is_final)
    page.wait_for_selector("#notify-count .badge >> text=2")
    page.wait_for_function("window.shownNotifications.length === 2")
    assert page.evaluate("window.notReloaded") is True
    shown = page.evaluate("window.shownNotifications")
    assert [n["title"] for n in shown] == [f"{job.name} started", f"{job.name} completed"]
    assert "ran to the end" in shown[1]["body"]
    page.wait_for_timeout(2500)  # two more refreshes: nothing is shown twice
    assert page.evaluate("window.shownNotifications.length") == 2
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "notification-count.png")

    page.click("#notify-count")
    page.wait_for_url("**/jobs/notifications/")
    assert page.locator("li.notification.unread").count() == 2
    page.screenshot(path=ARTIFACTS / "notifications.png", full_page=True)
    page.click(f"text={job.name} completed")
    page.wait_for_url(f"**/jobs/{job.pk}/")
    page.wait_for_selector("#notify-count:not(:has(.badge))")  # read: the count is gone

    # The job's own choice, saved in place: the page stays.
    page.evaluate("window.notReloaded = true")
    page.click("text=Notifications for this job")
    assert page.is_checked("#job-notify input[name=on_start]")  # from the default
    page.uncheck("#job-notify input[name=on_start]")
    page.click("text=Save for this job")
    page.wait_for_selector("#job-notify >> text=Saved.")
    assert page.is_visible("text=This job's own choice.")
    assert page.evaluate("window.notReloaded") is True
    page.screenshot(path=ARTIFACTS / "job-notifications.png", full_page=True)
    assert not Job.objects.get(pk=job.pk).notification_choice.on_start


ASKING_NOTIFICATIONS = """
window.Notification = class {
  static permission = "default";
  static requestPermission() {
    window.permissionAsked = true;
    window.Notification.permission = "granted";
    return Promise.resolve("granted");
  }
};
"""


def test_the_browser_asks_for_permission_only_on_a_click(
    browser,  # noqa: F811  (a fixture)
    live_server,
    transactional_db,
    django_user_model,
):
    django_user_model.objects.create_user("alice", password="alice-password")
    context = browser.new_context(base_url=live_server.url)
    context.add_init_script(ASKING_NOTIFICATIONS)
    page = context.new_page()
    page.goto("/accounts/login/?next=/jobs/notifications/settings/")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "alice-password")
    page.click("button[type=submit]")
    page.wait_for_selector("#notify-permission:visible")
    assert page.evaluate("window.permissionAsked") is None
    page.click("#notify-permission")
    page.wait_for_selector("#notify-permission", state="hidden")
    assert page.evaluate("window.permissionAsked") is True
    context.close()
