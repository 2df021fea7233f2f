"""In Chromium: a source under the advice leads to its section of the document, in the portal."""

import io
from urllib.parse import urlencode

from django.core.management import call_command

from guidance.engine import sources
from guidance.models import Document
from tests.test_browser import ARTIFACTS, browser  # noqa: F401  (the module-wide Chromium)
from tests.test_compose_page import GOOD
from tests.test_guidance_documents import docs_dir  # noqa: F401  (a fixture)


def test_a_source_link_lands_on_its_section(
    browser,  # noqa: F811
    live_server,
    transactional_db,
    django_user_model,
    docs_dir,  # noqa: F811
):
    call_command("seed_guidance", stdout=io.StringIO())  # imports the documents too
    django_user_model.objects.create_user("alice", password="alice-password")
    tiers = sources.DATASET_SIZE_TIERS
    document = Document.objects.get(file_name=tiers.document)
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        advice = f"/guidance/narval/advice/?{urlencode(GOOD)}"
        page.goto(f"/accounts/login/?next={advice.replace('?', '%3F').replace('&', '%26')}")
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", "alice-password")
        page.click("button[type=submit]")
        page.wait_for_selector('[data-placement="node_local"]')

        link = page.locator(".source a", has_text=f"{document.title} — {tiers.section}").first
        link.click()
        page.wait_for_url(f"**/guidance/documents/{document.slug}/#*")

        anchor = page.evaluate("location.hash.slice(1)")
        target = page.locator(":target")
        assert target.count() == 1 and target.get_attribute("id") == anchor
        assert tiers.section.split(" / ")[-1] in target.inner_text()
        # Scrolled to it: the heading is on screen, and the page's top is not.
        assert page.evaluate("window.scrollY") > 0
        box = target.bounding_box()
        assert box is not None and 0 <= box["y"] < 800
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=ARTIFACTS / "source-link.png")
    finally:
        context.close()
