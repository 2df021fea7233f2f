"""The home page in Chromium, on a laptop and on a phone: nothing runs out of the screen."""

import io

import pytest
from django.core.management import call_command

from guidance.models import Cluster
from jobs.models import ClusterAccount, Composition, Job, JobState
from tests.test_browser import browser  # noqa: F401  (the module-wide Chromium)

SCREENS = {"laptop": (1280, 800), "phone": (390, 844)}


def _context(browser, live_server, screen: str):  # noqa: F811
    width, height = SCREENS[screen]
    return browser.new_context(
        base_url=live_server.url, viewport={"width": width, "height": height}
    )


@pytest.fixture
def alice(transactional_db, django_user_model):
    call_command("seed_guidance", stdout=io.StringIO())
    user = django_user_model.objects.create_user("alice", password="alice-password")
    account = ClusterAccount.objects.create(
        owner=user,
        cluster=Cluster.objects.get(slug="narval"),
        username="alice",
        public_key="ssh-ed25519 AAAA",
        private_key_encrypted="not used here",
    )
    for name, state in [("resnet50-imagenet-bs256", JobState.RUNNING), ("bert", JobState.PENDING)]:
        Job.objects.create(
            owner=user, account=account, name=name, script="#!/bin/bash\n", state=state,
            reason="Priority" if state == JobState.PENDING else "", gpu_utilization=41.0,
            gpu_warning="GPUs under 50% for 20 minutes" if state == JobState.RUNNING else "",
        )  # fmt: skip
    Composition.objects.create(owner=user, name="vit sweep", fields={}, script="")
    return user


@pytest.mark.parametrize("screen", SCREENS)
def test_the_home_page_fits_the_screen(browser, live_server, alice, screen):  # noqa: F811
    width, _ = SCREENS[screen]
    context = _context(browser, live_server, screen)
    page = context.new_page()
    try:
        page.goto("/accounts/login/?next=/")
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", "alice-password")
        page.click("button[type=submit]")
        page.wait_for_url(f"{live_server.url}/")
        assert page.locator("#active-jobs").inner_text().count("Running") == 1
        assert page.locator("main").get_by_role("link", name="New job").first.is_visible()
        page_width = page.evaluate("document.documentElement.scrollWidth")
        assert page_width <= width, f"the page is {page_width} px wide on a {width} px screen"
        page.screenshot(path=f"artifacts/home-{screen}.png", full_page=True)
    finally:
        context.close()


@pytest.mark.parametrize("screen", SCREENS)
def test_a_visitor_learns_what_the_portal_does_and_can_log_in(browser, live_server, db, screen):  # noqa: F811
    width, _ = SCREENS[screen]
    context = _context(browser, live_server, screen)
    page = context.new_page()
    try:
        page.goto("/")
        assert page.locator("main").get_by_role("link", name="Log in").first.is_visible()
        page_width = page.evaluate("document.documentElement.scrollWidth")
        assert page_width <= width, f"the page is {page_width} px wide on a {width} px screen"
        page.screenshot(path=f"artifacts/home-visitor-{screen}.png", full_page=True)
    finally:
        context.close()
