"""In a real headless Chromium, with real Slurm jobs: a grid sweep composed on the dev cluster
shows its run count and GPU-hours as it is typed, is submitted as a job array (half-hour runs),
and its page's Runs table fills by itself, without a reload, until every run has completed.
The test process submits and polls the cluster, as the worker and beat would."""

import io
import re
import uuid

import pytest
from django.core.management import call_command

from jobs import tasks
from jobs.models import Job
from tests.test_browser import ARTIFACTS, browser, logged_in  # noqa: F401  (a fixture)

GRID = "lr = 0.1 0.01\nseed = 1 2 3"
# Each run leaves its values in its own results folder; $RESULTS_DIR is the run's own.
# Two seconds of work: a sweep whose runs all took no time has no efficiency report to show.
COMMAND = 'sleep 2; echo "lr={lr} seed={seed}" > "$RESULTS_DIR/out.txt"'
# The six runs in the grid's order, the last name varying fastest.
VALUES = [(lr, seed) for lr in ("0.1", "0.01") for seed in ("1", "2", "3")]


@pytest.fixture
def results(devcluster) -> str:
    """A results folder of the test's own in the user's home on the cluster, and the data the
    job checks first."""
    folder = f"sweep-{uuid.uuid4().hex[:8]}"
    made = devcluster.ssh("mkdir -p ~/data && echo sample > ~/data/sample.txt")
    assert made.returncode == 0, made.stderr
    yield folder
    devcluster.ssh(f"rm -rf ~/{folder}")


@pytest.fixture
def page(browser, live_server, transactional_db, django_user_model, devcluster):  # noqa: F811
    call_command("seed_guidance", stdout=io.StringIO())
    call_command("seed_templates", stdout=io.StringIO())
    django_user_model.objects.create_user("alice", password="alice-password")
    call_command("register_devcluster", "alice", stdout=io.StringIO())
    yield from logged_in(browser, live_server, "/jobs/new/", timeout_ms=20_000)


def _runs(page) -> list[list[str]]:
    """The Runs table's rows as the user reads them: each row's cells' text."""
    return page.eval_on_selector_all(
        "#job-runs tbody tr",
        "rows => rows.map(row => [...row.cells].map(cell => cell.innerText.trim()))",
    )


def test_a_grid_sweep_is_composed_submitted_and_followed_run_by_run(page, results, devcluster):
    name = f"sweep-{uuid.uuid4().hex[:6]}"
    page.select_option("select[name=cluster]", "local")
    page.wait_for_selector("select[name=gpu_type] option[value=a100]", state="attached")
    page.select_option("select[name=gpu_type]", "a100")
    page.fill("input[name=job_name]", name)
    page.fill("input[name=dataset_gb]", "1")
    page.fill("input[name=data_path]", "$HOME/data")
    page.fill("input[name=results_dir]", f"$HOME/{results}")
    page.fill("input[name=hours]", "0.5")
    page.fill("textarea[name=command]", COMMAND)
    page.evaluate("window.notReloaded = true")
    page.fill("textarea[name=sweep_grid]", GRID)
    # Six runs of half an hour on one GPU each: an array task per run.
    page.wait_for_selector("#sweep-summary .sweep-runs >> text=6 runs")
    page.wait_for_selector("#sweep-summary .sweep-gpu-hours >> text=3 GPU-hours")
    assert "one job array" in page.inner_text("#sweep-summary")
    assert "#SBATCH --array=1-6" in page.input_value("#script-text")
    assert page.evaluate("window.notReloaded") is True
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / "sweep-composed.png", full_page=True)

    page.get_by_role("button", name="Save and submit").click()
    page.wait_for_url(re.compile(r"/jobs/\d+/$"))
    job = Job.objects.get(name=name)
    assert page.url.endswith(job.get_absolute_url())
    page.wait_for_selector("#job-runs")
    assert len(_runs(page)) == 6  # listed from the script before Slurm has the job
    tasks.submit_job.apply(args=[job.pk])
    job.refresh_from_db()
    assert job.slurm_id, job.message

    page.evaluate("window.notReloaded = true")
    # The table refreshes itself every 10 s while the sweep runs; beat's part is played here.
    for _ in range(60):
        tasks.poll_clusters.apply()
        job.refresh_from_db()
        rows = _runs(page)
        if job.is_final and all(row[3:5] == ["Completed", "0"] for row in rows):
            break
        page.wait_for_timeout(2000)
    assert page.evaluate("window.notReloaded") is True
    # Run, lr, seed, state, exit code, time, node, GPU use, output.
    assert [row[:5] for row in rows] == [
        [str(n), lr, seed, "Completed", "0"] for n, (lr, seed) in enumerate(VALUES, start=1)
    ], rows
    assert all(row[6] in ("a100-1", "a100-2") for row in rows), rows
    assert "6 runs: 6 completed, 0 failed, 0 running, 0 waiting" in page.inner_text("#job-runs")
    assert page.locator("#job-runs button", has_text="Re-run failed runs").count() == 0
    page.screenshot(path=ARTIFACTS / "sweep-runs.png", full_page=True)
    # Each run wrote its own values into its own folder.
    for n, (lr, seed) in enumerate(VALUES, start=1):
        out = f"~/{results}/run-{n:03d}_lr-{lr}_seed-{seed}/out.txt"
        assert devcluster.ssh(f"cat {out}").stdout == f"lr={lr} seed={seed}\n", out
    # sacct's six tasks each had their own limit: the report sizes the next sweep per run (each
    # took seconds of its half hour), never from the six tasks' times added up.
    assert job.task_time_limit_seconds * 6 == job.time_limit_seconds, job.time_limit_seconds
    assert 2 <= job.longest_task_seconds <= min(60, job.elapsed_seconds), job.longest_task_seconds
    page.reload()
    page.wait_for_selector("text=0:15:00 per run instead of 0:30:00", timeout=10_000)
