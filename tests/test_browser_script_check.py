"""Check my script in Chromium on a phone (390x844) and a laptop: a pasted script's findings with
their weight, fix and source, the lines they are about marked in the listing, the fixed script to
download or put in the box, the way to the composer, and nothing wider than the screen."""

import io
from pathlib import Path

import pytest
from django.core.management import call_command

from guidance.engine.script_check import Severity
from tests.script_check_helpers import GOOD
from tests.test_browser import ARTIFACTS, browser, logged_in  # noqa: F401  (the module-wide Chromium)

SCREENS = {"phone": (390, 844), "laptop": (1280, 800)}
NO_ACCOUNT = GOOD.replace("#SBATCH --account=def-someuser\n", "")
# An #SBATCH line after the first command, which sbatch ignores: a finding about that line.
LATE = NO_ACCOUNT + "#SBATCH --mem=1G\n"


@pytest.fixture(params=SCREENS)
def page(request, browser, live_server, transactional_db, django_user_model):  # noqa: F811
    call_command("seed_guidance", stdout=io.StringIO())
    django_user_model.objects.create_user("alice", password="alice-password")
    width, height = SCREENS[request.param]
    screen = {"width": width, "height": height}
    for page in logged_in(browser, live_server, "/jobs/check/", 15_000, screen):
        page.screen = request.param
        yield page


def _check(page, script: str) -> None:
    page.select_option("select[name=cluster]", "narval")
    page.fill("textarea[name=script]", script)
    page.click("text=Check the script")
    page.wait_for_selector("#result h2")


def _fits(page) -> None:
    width = page.viewport_size["width"]
    scrolled = page.evaluate("document.documentElement.scrollWidth")
    assert scrolled <= width, f"the page is {scrolled} px wide on a {width} px screen"


def test_a_script_without_an_account_is_told_why_and_how_to_fix_it(page):
    _check(page, LATE)
    finding = page.locator('.finding[data-code="no_account"]')
    assert finding.locator(".severity-badge").inner_text() == "Would fail"
    said = finding.inner_text()
    assert "No --account" in said
    assert "Fix: Add #SBATCH --account=def-yourgroup" in said
    assert "Source: Machine learning tutorial" in said
    # Worst first: whatever would fail comes before what wastes, before advice.
    weights = page.locator(".finding").evaluate_all("all => all.map(f => f.dataset.severity)")
    ranks = [Severity(w).rank for w in weights]
    assert len(ranks) >= 2 and ranks == sorted(ranks)
    assert page.locator(".script-listing .listing-line").count() == LATE.count("\n")
    assert "+#SBATCH --account=def-yourgroup" in page.locator("#fixed-script ins").all_inner_texts()
    assert page.get_by_role("button", name="Download the fixed script").is_visible()
    assert page.get_by_role("link", name="Open in the composer").is_visible()
    _fits(page)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"script-check-{page.screen}.png", full_page=True)


def test_the_line_a_finding_is_about_is_marked_in_the_listing(page):
    _check(page, LATE)
    late = LATE.count("\n")
    finding = page.locator('.finding[data-code="ignored_directive"]')
    finding.locator(f'a[href="#line-{late}"]').click()
    line = page.locator(f"#line-{late}")
    assert "flagged" in line.get_attribute("class")
    assert line.inner_text().endswith("#SBATCH --mem=1G")
    assert page.evaluate("location.hash") == f"#line-{late}"
    assert line.is_visible()
    _fits(page)


def test_the_fixed_script_downloads_and_goes_into_the_box(page):
    _check(page, NO_ACCOUNT)
    with page.expect_download() as download:
        page.get_by_role("button", name="Download the fixed script").click()
    assert download.value.suggested_filename == "job-fixed.sh"
    assert "#SBATCH --account=def-yourgroup\n" in Path(download.value.path()).read_text()
    page.get_by_role("button", name="Put it in the box").click()
    page.wait_for_selector("#result h2")
    assert "#SBATCH --account=def-yourgroup" in page.input_value("textarea[name=script]")
    assert page.locator('.finding[data-code="no_account"]').count() == 0
    _fits(page)


def test_open_in_the_composer_starts_a_composition_from_the_script(page):
    _check(page, GOOD.replace("--gres=gpu:1", "--gres=gpu:a100:1\n#SBATCH --job-name=resnet"))
    assert "Not carried over:" in page.inner_text("#to-composer")
    page.get_by_role("link", name="Open in the composer").click()
    page.wait_for_url("**/jobs/new/?**")
    assert page.input_value("input[name=job_name]") == "resnet"
    assert page.input_value("input[name=account]") == "def-someuser"
    assert page.input_value("select[name=gpu_type]") == "a100"
    assert page.input_value("input[name=hours]") == "3"
    assert page.input_value("textarea[name=command]").startswith("python $SOURCEDIR/train.py")
    # The one question a script does not answer is asked.
    assert "Dataset size (GB)" in page.inner_text("#panel")


FOUR_GPUS = GOOD.replace("#SBATCH --gres=gpu:1", "#SBATCH --gres=gpu:4")


def test_a_finding_that_hangs_on_the_program_is_asked_until_the_program_is_given(page):
    _check(page, FOUR_GPUS)
    asked = page.locator('.finding[data-code="multi_gpu_without_launcher"]')
    assert asked.locator(".basis-badge").inner_text() == "A question: give the program to settle it"
    assert "Does the program use all 4 GPUs itself" in asked.inner_text()
    # The program in its box beside the script: the same check now reads it.
    page.fill("textarea[name=code-program]", "import torch\nmodel = torch.nn.Linear(4, 2).cuda()\n")
    page.click("text=Check the script")
    page.wait_for_selector("[data-program-read]")
    settled = page.locator('.finding[data-code="multi_gpu_without_launcher"]')
    assert settled.locator(".basis-badge").inner_text() == "From your program"
    assert settled.get_attribute("data-severity") == "wastes"
    assert "+#SBATCH --gres=gpu:1" in " ".join(page.locator("#fixed-script ins").all_inner_texts())
    page.screenshot(path=str(ARTIFACTS / f"check-program-basis-{page.screen}.png"), full_page=True)
    _fits(page)
