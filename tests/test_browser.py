"""In a real headless Chromium: the advice follows the form live, without reloading the page."""

import io
import os
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.services import service_missing

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
# Flags from running Debian's chromium as root on a machine without a network or a display.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Django refuses synchronous database calls from an event loop; the live server runs its own
# thread, and the test only drives the browser while it waits for pages.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        service_missing(f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def logged_in(browser, live_server, path: str, timeout_ms: int = 10_000, viewport=None):
    """A page of its own browser context, logged in as alice (password alice-password) at path;
    `viewport`: {"width", "height"} of a screen other than Playwright's default."""
    context = browser.new_context(base_url=live_server.url, viewport=viewport)
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    page.goto(f"/accounts/login/?next={path}")
    page.fill("input[name=username]", "alice")
    page.fill("input[name=password]", "alice-password")
    page.click("button[type=submit]")
    page.wait_for_url(f"**{path}")
    yield page
    context.close()


@pytest.fixture
def page(browser, live_server, transactional_db, django_user_model):
    call_command("seed_guidance", stdout=io.StringIO())
    call_command("seed_templates", stdout=io.StringIO())
    django_user_model.objects.create_user("alice", password="alice-password")
    yield from logged_in(browser, live_server, "/guidance/narval/advice/")


def test_the_storage_advice_follows_the_dataset_size_live(page):
    page.fill("input[name=hours]", "12")
    # A marker on window disappears if the page reloads: the updates must come through htmx.
    page.evaluate("window.notReloaded = true")
    for size, placement in [("5", "memory"), ("50", "node_local"), ("500", "shared")]:
        page.fill("input[name=dataset_gb]", size)
        page.wait_for_selector(f'[data-placement="{placement}"]')
    assert page.evaluate("window.notReloaded") is True
    assert "too large for $SLURM_TMPDIR" in page.inner_text("#result")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "advice-live.png", full_page=True)


def test_a_bad_value_shows_its_message_live_and_keeps_the_input(page):
    page.fill("input[name=hours]", "12")
    page.fill("input[name=dataset_gb]", "-3")
    page.wait_for_selector("text=The dataset size cannot be negative.")
    assert page.input_value("input[name=dataset_gb]") == "-3"
    page.fill("input[name=dataset_gb]", "50")
    page.wait_for_selector('[data-placement="node_local"]')


def test_the_composer_updates_advice_and_script_live(page):
    page.goto("/jobs/new/?template=pytorch-training-1gpu")
    page.select_option("select[name=cluster]", "narval")
    page.fill("input[name=data_path]", "/project/def-someuser/data")
    page.fill("input[name=hours]", "12")
    page.evaluate("window.notReloaded = true")
    for size, placement, staging in [
        ("5", "memory", "rsync -a"),
        ("50", "node_local", "rsync -a"),
        ("500", "shared", 'STAGE_DIR="$DATA_SOURCE"'),
    ]:
        page.fill("input[name=dataset_gb]", size)
        page.wait_for_selector(f'[data-placement="{placement}"]')
        assert staging in page.input_value("#script-text")
    assert page.evaluate("window.notReloaded") is True
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "composer-live.png", full_page=True)


def test_a_hand_edit_survives_live_updates_and_is_downloaded(page):
    page.goto("/jobs/new/?template=pytorch-training-1gpu")
    page.fill("input[name=data_path]", "/project/def-someuser/data")
    page.fill("input[name=hours]", "12")
    page.fill("input[name=dataset_gb]", "50")
    page.wait_for_selector('[data-placement="node_local"]')
    page.fill("#script-text", "#!/bin/bash\necho edited by hand\n")
    page.fill("input[name=dataset_gb]", "500")
    page.wait_for_selector('[data-placement="shared"]')
    assert page.input_value("#script-text") == "#!/bin/bash\necho edited by hand\n"
    assert page.is_visible("#edited-notice")
    with page.expect_download() as download:
        page.click("button[name=download]")
    assert download.value.suggested_filename == "train.sbatch"
    assert Path(download.value.path()).read_text() == "#!/bin/bash\necho edited by hand\n"
