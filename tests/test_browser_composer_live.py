"""The composer in Chromium, as a person steers it: a bad value is named beside its field while
the advice and script stay, Enter updates the advice, a template keeps the cluster chosen, and a
Run:ai cluster's form asks only what applies to it."""

import io
from pathlib import Path

import pytest
from django.core.management import call_command

from jobs.compose import sweep_script
from tests.test_browser import ARTIFACTS, browser, logged_in  # noqa: F401  (the module-wide Chromium)


@pytest.fixture
def page(browser, live_server, transactional_db, django_user_model):  # noqa: F811
    call_command("seed_guidance", stdout=io.StringIO())
    call_command("seed_templates", stdout=io.StringIO())
    django_user_model.objects.create_user("alice", password="alice-password")
    viewport = {"width": 1280, "height": 800}
    yield from logged_in(browser, live_server, "/jobs/new/", 15_000, viewport)


def _describe(page) -> None:
    page.select_option("select[name=cluster]", "narval")
    page.fill("input[name=dataset_gb]", "50")
    page.fill("input[name=hours]", "12")
    page.fill("input[name=data_path]", "/project/def-someuser/data")
    page.fill("input[name=job_name]", "resnet")
    page.fill("textarea[name=command]", "python train.py")
    page.wait_for_selector('[data-placement="node_local"]')
    page.wait_for_function("document.getElementById('script-text').value.includes('resnet')")


def test_a_bad_value_is_named_beside_its_field_and_the_advice_stays(page):
    _describe(page)
    script = page.input_value("#script-text")
    page.fill("input[name=dataset_gb]", "-5")
    error = page.locator("#errors-dataset_gb .errorlist")
    error.wait_for()
    assert "cannot be negative" in error.inner_text()
    # The advice and the script for the values before are still there, and a note says why.
    assert page.locator('[data-placement="node_local"]').count() == 1
    assert page.input_value("#script-text") == script
    assert "before your last change" in page.inner_text("#advice-note")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "composer-error-beside-field.png")
    # Corrected: the error goes, the note goes, the advice follows the new value.
    page.fill("input[name=dataset_gb]", "50")
    page.fill("input[name=hours]", "30")
    page.wait_for_function("!document.querySelector('#errors-dataset_gb .errorlist')")
    page.wait_for_function("document.getElementById('script-text').value.includes('1-06:00:00')")
    assert page.inner_text("#advice-note").strip() == ""


def test_enter_in_a_field_updates_the_advice_and_checks_no_path(page):
    _describe(page)
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    page.fill("input[name=hours]", "30")
    page.press("input[name=hours]", "Enter")
    page.wait_for_function("document.getElementById('script-text').value.includes('1-06:00:00')")
    assert page.url.endswith("/jobs/new/")  # no page load
    assert not [url for url in requests if "check-path" in url or "check_path" in url]
    assert page.locator("#path-check").inner_text().strip() == ""


def test_a_template_picked_after_the_cluster_keeps_the_cluster(page):
    page.select_option("select[name=cluster]", "graham")
    template = page.locator(".templates a", has_text="PyTorch").first
    template.click()
    page.wait_for_load_state()
    chosen = page.eval_on_selector("select[name=cluster]", "s => s.value")
    notes = page.locator(".start-note")
    # Kept, or changed with a word beside the field: never changed silently.
    assert chosen == "graham" or "not graham" in notes.inner_text()


def test_a_run_ai_cluster_asks_only_what_applies(page):
    page.select_option("select[name=cluster]", "dgx")
    page.fill("input[name=dataset_gb]", "50")
    page.fill("input[name=hours]", "12")
    page.wait_for_selector('.compose-fields[data-scheduler="runai"]', state="attached")
    for name in ("account", "modules", "cpus_per_task", "time_limit", "results_dir"):
        assert not page.locator(f"#field-{name}").is_visible(), name
    assert not page.locator(".section-by-hand summary").is_visible()
    assert not page.get_by_text("are not read yet").is_visible()
    assert page.locator("#field-dataset_gb").is_visible()
    # Back on a Slurm cluster, its questions come back.
    page.select_option("select[name=cluster]", "narval")
    page.wait_for_selector('.compose-fields[data-scheduler="slurm"]', state="attached")
    assert page.locator("#field-account").is_visible()


def test_save_as_follows_the_job_name_until_a_name_of_its_own_is_typed(page):
    _describe(page)
    page.fill("input[name=job_name]", "vit-large")
    assert page.input_value("#composition-name") == "vit-large"
    page.fill("#composition-name", "my sweep base")
    page.fill("input[name=job_name]", "vit-small")
    assert page.input_value("#composition-name") == "my sweep base"


def test_gpus_the_nodes_change_are_said_beside_the_gpus(page):
    _describe(page)
    page.fill("input[name=gpu_count]", "4")
    page.fill("input[name=nodes]", "100")
    page.check("input[name=multi_gpu]")
    warning = page.locator('#warnings-gpu_count [data-code="fewer_gpus_than_nodes"]')
    warning.wait_for()
    page.wait_for_function("document.getElementById('script-text').value.includes('--nodes=100')")
    assert "100" in warning.inner_text()
    # Each command of the data plan is a line of its own, as it runs and as it copies.
    command = page.locator("pre.command code").first.inner_text()
    assert command.splitlines() == [line for line in command.splitlines() if line.strip()]
    assert len(command.splitlines()) >= 2, command


def test_values_typed_for_a_slurm_cluster_do_not_hold_back_a_run_ai_clusters_advice(page):
    _describe(page)
    page.click(".section-by-hand summary")
    page.fill("input[name=time_limit]", "99-00:00:00")
    page.locator("#errors-time_limit .errorlist").wait_for()
    page.select_option("select[name=cluster]", "dgx")
    page.wait_for_selector('.compose-fields[data-scheduler="runai"]', state="attached")
    page.get_by_text("advice only, no job script is made").first.wait_for()
    assert page.locator("#errors-time_limit .errorlist").count() == 0
    # Back on Narval, the value typed is still there, and still wrong.
    page.select_option("select[name=cluster]", "narval")
    page.locator("#errors-time_limit .errorlist").wait_for()
    assert page.input_value("input[name=time_limit]") == "99-00:00:00"


def test_a_command_of_several_lines_is_downloaded_as_typed(page):
    """The browser posts a textarea's line breaks as CRLF: the command keeps its lines, and a
    sweep's runs are read back from the script."""
    _describe(page)
    page.fill("textarea[name=command]", 'cd "$HOME"\npython train.py --lr {lr}')
    page.fill("textarea[name=sweep_grid]", "lr = 0.1 0.01")
    page.wait_for_function("document.getElementById('script-text').value.includes('run-002')")
    with page.expect_download() as download:
        page.click("button[name=download]")
    script = Path(download.value.path()).read_text()
    assert "\r" not in script
    runs = sweep_script.runs_in(script)
    assert [dict(run.values) for run in runs] == [{"lr": "0.1"}, {"lr": "0.01"}]
