"""In Chromium on a phone: values that read wrong when split across lines (124500M, 1-00:00:00,
a GPU count, 249,500 MB) stay on one line in narrow table columns."""

import io

import pytest
from django.core.management import call_command

from tests.test_browser import ARTIFACTS, browser, logged_in  # noqa: F401  (the module-wide Chromium)

PHONE = {"width": 390, "height": 844}

# How many lines each `.nowrap` element under `root` takes: the lines of its text's box, as
# the height of the range around its contents over the element's line height.
LINES = """root => [...document.querySelectorAll(root + ' .nowrap')].map(el => {
  const range = document.createRange();
  range.selectNodeContents(el);
  const style = getComputedStyle(el);
  const line = parseFloat(style.lineHeight) || 1.2 * parseFloat(style.fontSize);
  return {text: el.innerText, lines: Math.round(range.getBoundingClientRect().height / line)};
})"""


@pytest.fixture
def alice(transactional_db, django_user_model):
    call_command("seed_guidance", stdout=io.StringIO())
    return django_user_model.objects.create_user("alice", password="alice-password")


@pytest.fixture
def phone(browser, live_server, alice):  # noqa: F811
    yield from logged_in(browser, live_server, "/", viewport=PHONE)


def _one_line_each(page, root: str) -> list[str]:
    found = page.evaluate(LINES, root)
    assert found, f"no .nowrap value under {root}"
    split = [f"{v['text']!r} on {v['lines']} lines" for v in found if v["lines"] != 1]
    assert not split, split
    return [v["text"] for v in found]


def test_the_resources_keep_each_value_on_one_line_on_a_phone(phone):
    phone.goto("/guidance/narval/advice/")
    phone.fill("input[name=hours]", "24")
    phone.fill("input[name=dataset_gb]", "50")
    phone.wait_for_selector('[data-placement="node_local"]')
    values = _one_line_each(phone, "table.resources")
    assert "1-00:00:00" in values
    assert any(v.endswith("M") and v[:-1].isdigit() for v in values), values
    ARTIFACTS.mkdir(exist_ok=True)
    phone.locator("table.resources").screenshot(path=ARTIFACTS / "resources-phone.png")


def test_the_node_types_keep_memory_and_counts_on_one_line(phone):
    phone.goto("/guidance/narval/")
    values = _one_line_each(phone, "table.node-types")
    assert any(v.endswith(" MB") for v in values), values
