"""The training program on the Check page, in Chromium on a phone (390x844) and a laptop
(1280x800): a pasted program's findings with their impact, fix and source; the file:line link
that jumps to the marked line; several uploaded files; nothing wider than the screen. And the
composer's hint, which follows the workload live."""

import io

import pytest
from django.core.management import call_command

from tests.test_api_check_code import CLEAN, DATA_MODULE, ENTRY, LOADER, LOADER_LINE
from tests.test_browser import ARTIFACTS, browser, logged_in  # noqa: F401  (the module-wide Chromium)

SCREENS = {"phone": (390, 844), "laptop": (1280, 800)}
# Room for the loader's line to be scrolled to: the program goes on well below it.
LONG_LOADER = LOADER + "".join(f"\n\ndef helper_{i}(x):\n    return x * {i}\n" for i in range(40))


@pytest.fixture(params=SCREENS)
def page(request, browser, live_server, transactional_db, django_user_model):  # noqa: F811
    call_command("seed_guidance", stdout=io.StringIO())
    call_command("seed_templates", stdout=io.StringIO())
    django_user_model.objects.create_user("alice", password="alice-password")
    width, height = SCREENS[request.param]
    screen = {"width": width, "height": height}
    for page in logged_in(browser, live_server, "/jobs/check/", 15_000, screen):
        page.screen = request.param
        yield page


def _check(page, program: str | None = None, files: dict[str, str] | None = None) -> None:
    page.select_option("select[name=code-cluster]", "narval")
    if program is not None:
        page.fill("textarea[name=code-program]", program)
    if files:
        page.set_input_files(
            "input[name=code-uploads]",
            [
                {"name": name, "mimeType": "text/x-python", "buffer": text.encode()}
                for name, text in files.items()
            ],
        )
    page.click("text=Check the program")
    page.wait_for_selector("#code-result h3, #code-result .error")


def _fits(page) -> None:
    width = page.viewport_size["width"]
    scrolled = page.evaluate("document.documentElement.scrollWidth")
    assert scrolled <= width, f"the page is {scrolled} px wide on a {width} px screen"


def _in_view(page, locator) -> bool:
    box = locator.bounding_box()
    return box is not None and 0 <= box["y"] < page.viewport_size["height"]


def test_a_pasted_programs_findings_link_to_their_marked_lines(page):
    _check(page, LONG_LOADER)
    workers = page.locator('.code-finding[data-rule="dataloader_num_workers"]')
    assert workers.is_visible()
    assert workers.locator(".severity-badge").inner_text() == "High impact"
    said = workers.inner_text()
    assert f"train.py:{LOADER_LINE}:" in said
    assert "Fix:" in said or workers.locator("pre.snippet.after").count() == 1
    assert "Source:" in said
    # Most impact first.
    impacts = page.locator('.code-finding[data-kind="change"]').evaluate_all(
        "all => all.map(f => f.dataset.impact)"
    )
    assert len(impacts) >= 2 and impacts == sorted(impacts, key=["high", "medium", "low"].index)
    _fits(page)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / f"code-check-{page.screen}.png", full_page=True)
    page.evaluate("document.getElementById('code-result').scrollIntoView()")
    page.screenshot(path=ARTIFACTS / f"code-check-findings-{page.screen}.png")

    workers.locator("a.finding-where").click()
    line = page.locator(f"#code-file-1-line-{LOADER_LINE}")
    assert page.evaluate("location.hash") == f"#code-file-1-line-{LOADER_LINE}"
    assert "flagged" in line.get_attribute("class")
    assert "DataLoader(dataset" in line.inner_text()
    assert _in_view(page, line)
    page.screenshot(path=ARTIFACTS / f"code-check-line-{page.screen}.png")
    _fits(page)


def test_several_uploaded_files_are_checked_together(page):
    _check(page, files={"data.py": DATA_MODULE, "train.py": ENTRY})
    workers = page.locator('.code-finding[data-rule="dataloader_num_workers"]')
    assert "data.py:5:" in workers.inner_text()
    assert page.locator("details.program-file summary").count() == 2
    workers.locator("a.finding-where").click()
    line = page.locator(f"{page.evaluate('location.hash')}")
    assert "flagged" in line.get_attribute("class") and _in_view(page, line)
    _fits(page)


def test_a_clean_program_has_nothing_to_change_and_a_broken_one_is_named(page):
    _check(page, CLEAN)
    assert page.get_by_text("Nothing to change: this program already follows").is_visible()
    _check(page, "import torch\n\ndef train(:\n    pass\n")
    error = page.locator("#code-result .error").inner_text()
    assert "train.py" in error and "3" in error
    assert page.input_value("textarea[name=code-program]").startswith("import torch\n\ndef train(:")
    _fits(page)
    if page.screen == "phone":
        page.screenshot(path=ARTIFACTS / "code-check-error-phone.png", full_page=True)


def test_checking_one_box_keeps_what_was_typed_in_the_other(page):
    script = "#!/bin/bash\n#SBATCH --gpus-per-node=1\n#SBATCH --time=1:00:00\npython train.py\n"
    page.select_option("select[name=cluster]", "narval")
    page.fill("textarea[name=script]", script)
    _check(page, CLEAN)  # the program's button, the script never checked
    assert page.get_by_text("Nothing to change: this program already follows").is_visible()
    assert page.input_value("textarea[name=script]") == script
    page.fill("textarea[name=code-program]", LOADER)  # typed, not checked
    page.click("text=Check the script")
    page.wait_for_selector("#result h2, #result .error")
    assert page.input_value("textarea[name=code-program]") == LOADER
    assert page.input_value("textarea[name=script]") == script
    _fits(page)


def test_the_composer_hint_follows_the_workload(page):
    page.goto("/jobs/new/?template=pytorch-training-1gpu")
    page.select_option("select[name=cluster]", "narval")
    hint = page.get_by_role("link", name="Check your training program first")
    hint.wait_for()
    page.select_option("select[name=workload]", "inference")
    hint.wait_for(state="detached")
    page.select_option("select[name=workload]", "training")
    hint.wait_for()
    hint.click()
    page.wait_for_url("**/jobs/check/?cluster=narval#training-program")
    # The program goes with the script's cluster, which the link chose.
    assert page.input_value("select[name=cluster]") == "narval"
    assert page.input_value("select[name=code-cluster]") == ""
    assert _in_view(page, page.locator("#training-program-title"))
