"""In a real headless Chromium: the composer checks the data path on the dev cluster through the
user's own login, and the plan says what the path is taken as, without reloading the page."""

import io
import pathlib
import shutil
import subprocess
import uuid
from collections.abc import Iterator

import pytest
from django.core.management import call_command

from tests.test_browser import ARTIFACTS, browser, logged_in  # noqa: F401  (a fixture)

HOME = pathlib.Path("/home/portaltest")


@pytest.fixture
def folder() -> Iterator[str]:
    root = HOME / f"browser-{uuid.uuid4().hex[:8]}" / "images"
    root.mkdir(parents=True)
    for i in range(4):
        (root / f"{i}.png").write_bytes(b"\x89PNG" * 10)
    subprocess.run(["chown", "-R", "portaltest:", str(root.parent)], check=True)
    yield f"~/{root.parent.name}/images"
    shutil.rmtree(root.parent, ignore_errors=True)


@pytest.fixture
def page(browser, live_server, transactional_db, django_user_model, devcluster):  # noqa: F811
    call_command("seed_guidance", stdout=io.StringIO())
    call_command("seed_templates", stdout=io.StringIO())
    django_user_model.objects.create_user("alice", password="alice-password")
    call_command("register_devcluster", "alice", stdout=io.StringIO())
    yield from logged_in(browser, live_server, "/jobs/new/", timeout_ms=15_000)


def test_the_data_path_is_checked_on_the_cluster_and_told_in_the_plan(page, folder):
    page.select_option("select[name=cluster]", "local")
    page.fill("input[name=dataset_gb]", "50")
    page.fill("input[name=hours]", "0.5")
    # The dev cluster's GPU types come into the list once the live update has the cluster.
    page.wait_for_selector("select[name=gpu_type] option[value=a100]", state="attached")
    page.select_option("select[name=gpu_type]", "a100")
    page.fill("textarea[name=command]", 'python3 train.py --data "$DATA_PATH"')
    page.evaluate("window.notReloaded = true")
    page.fill("input[name=data_path]", folder)
    page.wait_for_selector(f"text=The data path {folder} is taken as a folder (from its name)")

    page.click("text=Check this path on the cluster")
    page.wait_for_selector("#path-check.ok")
    assert "is a folder of 4 files: the job copies it with rsync" in page.inner_text("#path-check")

    page.select_option("select[name=data_kind]", "archive")
    page.click("text=Check this path on the cluster")
    page.wait_for_selector("#path-check.warning")
    assert "choose 'A folder'" in page.inner_text("#path-check")
    assert page.evaluate("window.notReloaded") is True
    assert page.input_value("input[name=data_path]") == folder
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "composer-path-check.png", full_page=True)
