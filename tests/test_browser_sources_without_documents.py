"""In Chromium, on a fresh clone without ../shared: no guidance document is imported, and every
source still reads as the document's title and section, linked to its public page where it has
one, never as the document's file name."""

import io
import re

import pytest
from django.core.management import call_command

from guidance.document_catalog import CATALOG
from guidance.engine import sources
from guidance.models import Document
from tests.test_browser import ARTIFACTS, browser, logged_in  # noqa: F401  (the module-wide Chromium)

FILE_NAME = re.compile(r"\b\d{3}_[0-9a-f]{16}\.txt\b")


@pytest.fixture
def page(browser, live_server, transactional_db, django_user_model, settings, tmp_path):  # noqa: F811
    settings.GUIDANCE_DOCS_DIR = tmp_path / "no-shared" / "guidance-docs"
    call_command("seed_guidance", stdout=io.StringIO())
    call_command("seed_templates", stdout=io.StringIO())
    assert not Document.objects.exists()  # nothing imported: the documents are not there
    django_user_model.objects.create_user("alice", password="alice-password")
    path = "/jobs/new/?template=pytorch-training-1gpu"
    yield from logged_in(browser, live_server, path, 15_000, {"width": 1280, "height": 800})


def _no_file_names_nor_copies(page) -> None:
    assert not FILE_NAME.findall(page.locator("body").inner_text())
    hrefs = page.locator(".source a").evaluate_all("links => links.map(a => a.href)")
    assert hrefs and not [h for h in hrefs if "/guidance/documents/" in h]  # no copy to link


def test_the_advice_cites_documents_by_title_with_their_public_address(page):
    page.select_option("select[name=cluster]", "narval")
    page.fill("input[name=data_path]", "/project/def-someuser/data")
    page.fill("input[name=hours]", "12")
    page.fill("input[name=dataset_gb]", "50")
    page.wait_for_selector('[data-placement="node_local"]')

    tiers = sources.DATASET_SIZE_TIERS
    title = CATALOG[tiers.document].title
    assert title == "Alliance docs: AI and Machine Learning"
    links = page.locator(".source a", has_text=f"{title} — {tiers.section}")
    assert links.count() >= 1
    assert links.first.get_attribute("href") == (
        "https://docs.alliancecan.ca/wiki/AI_and_Machine_Learning"
        "#Choosing_the_right_storage_type_for_your_dataset"
    )
    _no_file_names_nor_copies(page)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "sources-without-documents.png", full_page=True)


def test_a_document_published_nowhere_shows_its_title_without_a_link(page):
    page.goto("/guidance/processing/")
    title = CATALOG[sources.DOC_PROCESSING].title
    training = page.locator(".node-sources .source", has_text=f"{title} — 2. Training Process")
    assert training.count() == 1 and training.locator("a").count() == 0
    # Each numbered source of the node-type table is one the page lists.
    numbers = page.locator(".node-type-sources a").evaluate_all(
        "links => links.map(a => a.getAttribute('href'))"
    )
    for href in set(numbers):
        assert page.locator(href).count() == 1
    assert not FILE_NAME.findall(page.locator("body").inner_text())
