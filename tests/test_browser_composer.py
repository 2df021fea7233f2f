"""The composer in Chromium on a laptop (1280x800) and a phone (390x844): the user steers with
the cluster's own lists and values set by hand, sees limits refused and guidance quoted, is told
of a hand edit over a limit before it is saved, and nothing runs out of the screen."""

import io

import pytest
from django.core.management import call_command

from jobs.models import Composition
from tests.test_browser import ARTIFACTS, browser, logged_in  # noqa: F401  (the module-wide Chromium)

SCREENS = {"laptop": (1280, 800), "phone": (390, 844)}


@pytest.fixture
def alice(transactional_db, django_user_model):
    call_command("seed_guidance", stdout=io.StringIO())
    call_command("seed_templates", stdout=io.StringIO())
    return django_user_model.objects.create_user("alice", password="alice-password")


@pytest.fixture(params=SCREENS)
def page(request, browser, live_server, alice):  # noqa: F811
    width, height = SCREENS[request.param]
    path = "/jobs/new/?template=pytorch-training-1gpu"
    for page in logged_in(browser, live_server, path, 15_000, {"width": width, "height": height}):
        page.screen = request.param
        yield page


def _describe(page) -> None:
    page.select_option("select[name=cluster]", "narval")
    page.fill("input[name=data_path]", "/project/def-someuser/data")
    page.fill("input[name=hours]", "12")
    page.fill("input[name=dataset_gb]", "50")
    page.wait_for_selector('[data-placement="node_local"]')


def _fits(page) -> None:
    width = page.viewport_size["width"]
    scrolled = page.evaluate("document.documentElement.scrollWidth")
    assert scrolled <= width, f"the page is {scrolled} px wide on a {width} px screen"


def _by_hand(page):
    section = page.locator("details.section-by-hand")
    if section.get_attribute("open") is None:
        section.locator("summary").click()
    return section


def test_the_gpu_type_comes_from_the_clusters_list(page):
    _describe(page)
    options = page.locator("select[name=gpu_type] option").all_inner_texts()
    assert options == ["Recommend for me", "a100 (40 GB, NVIDIA A100-SXM4 40GB)"]
    page.select_option("select[name=cluster]", "cedar")
    page.wait_for_function(
        "() => [...document.querySelectorAll('select[name=gpu_type] option')].length > 2"
    )
    page.select_option("select[name=gpu_type]", "v100l")
    page.wait_for_selector("text=You asked for v100l")
    assert "--gres=gpu:v100l:1" in page.input_value("#script-text")
    _fits(page)


def test_a_time_over_the_maximum_is_refused_with_the_limit_and_its_source(page):
    _describe(page)
    _by_hand(page)
    page.fill("input[name=time_limit]", "8-00:00:00")
    page.locator("input[name=time_limit]").blur()
    # Beside the field, with its source; the advice for the values before stays meanwhile.
    alert = page.locator("#errors-time_limit .errorlist")
    alert.wait_for()
    assert "a100 jobs on Narval may run 7 days at most" in alert.inner_text()
    assert page.locator('[data-placement="node_local"]').count() == 1
    # The limit's own source: 004 states Narval's 7 days (002 names no Narval).
    assert "Source: A user's notes on the federation's clusters" in alert.inner_text()
    assert "Important elements of a sbatch script" in alert.inner_text()
    assert page.input_value("input[name=time_limit]") == "8-00:00:00"  # kept as typed
    _fits(page)


def test_memory_against_guidance_is_taken_with_the_rule_quoted(page):
    _describe(page)
    _by_hand(page)
    page.fill("input[name=memory]", "200G")
    page.wait_for_selector("#field-memory .field-warnings li")
    warning = page.inner_text("#field-memory .field-warnings")
    assert "Narval asks for 124500M per GPU" in warning
    page.wait_for_function("document.getElementById('script-text').value.includes('--mem=204800M')")
    assert "--mem=204800M" in page.inner_text("pre.salloc")
    page.screenshot(path=ARTIFACTS / f"composer-{page.screen}.png", full_page=True)
    _fits(page)


def test_a_hand_edit_over_the_maximum_is_flagged_before_it_is_saved(page):
    _describe(page)
    page.wait_for_function("document.getElementById('script-text').value.includes('--time=')")
    edited = page.input_value("#script-text").replace(
        "#SBATCH --time=0-12:00:00", "#SBATCH --time=90-02:00:00"
    )
    page.fill("#script-text", edited)
    page.click("button[name=save]")
    findings = page.locator("#edit-findings")
    findings.wait_for()
    assert "90-02:00:00" in findings.inner_text() or "7 days" in findings.inner_text()
    assert Composition.objects.count() == 0
    assert page.input_value("#script-text") == edited  # nothing lost
    page.click("button[name=save]")  # sent again: kept as the user wants it
    page.wait_for_url("**/jobs/compositions/**")
    assert "--time=90-02:00:00" in Composition.objects.get().script


def test_on_a_phone_the_advice_comes_before_the_gpu_questions_and_the_menu_folds(page):
    _describe(page)
    # Measured once the last live update is in: a panel being swapped has no box.
    page.wait_for_load_state("networkidle")
    panel = page.locator("#panel").bounding_box()
    gpus = page.locator(".section-gpus").bounding_box()
    data = page.locator(".section-data").bounding_box()
    if page.screen == "phone":
        assert data["y"] < panel["y"] < gpus["y"]
        assert not page.locator("nav[aria-label=Main]").is_visible()
        page.click("button.menu-toggle")
        assert page.get_by_role("link", name="My jobs").is_visible()
    else:
        assert panel["x"] > gpus["x"]  # beside the form
        assert page.locator("nav[aria-label=Main]").is_visible()
        assert not page.locator("button.menu-toggle").is_visible()
    _fits(page)
