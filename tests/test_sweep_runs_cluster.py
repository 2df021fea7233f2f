"""A grouped sweep on the real local Slurm cluster, submitted the composer's way: its page lists
each run's values and exit code as the runs wrote them in runs.tsv (read over SSH from a results
folder under $HOME), and "Re-run failed runs" runs only the two that failed, which pass the
second time.

Celery tasks run in-process here (`.apply()`), as in tests/test_jobs_cluster.py.
"""

import html
import io
import re
import time
import uuid

import pytest
from django.contrib.messages import get_messages
from django.core.management import call_command
from django.utils import timezone

from jobs import tasks
from jobs.models import Job, JobState, RunsTable
from jobs.runs import listing, reading
from jobs.runs.table import grouped_runs
from tests.test_validation import LOCAL

pytestmark = pytest.mark.django_db(transaction=True)

# Runs 1 and 2 (fail=yes) fail the first time, leaving a mark in their own checkpoint folder;
# run again, they find it and pass, as a program that resumes from its checkpoint would.
COMMAND = (
    'if [ {fail} = yes ] && [ ! -e "$CHECKPOINT_DIR/failed-once" ]; then '
    'touch "$CHECKPOINT_DIR/failed-once"; exit 3; fi; echo {seed} > "$RESULTS_DIR/seed.txt"'
)
GRID = "fail = yes no\nseed = 1 2"
FOLDERS = [
    "run-001_fail-yes_seed-1",
    "run-002_fail-yes_seed-2",
    "run-003_fail-no_seed-1",
    "run-004_fail-no_seed-2",
]


@pytest.fixture
def results(devcluster, user) -> str:
    """A results folder of the test's own under the user's home on the cluster, as the user
    writes it ("$HOME/..."), and the data the job checks first."""
    folder = f"sweep-{uuid.uuid4().hex[:8]}"
    made = devcluster.ssh("mkdir -p ~/data && echo sample > ~/data/sample.txt")
    assert made.returncode == 0, made.stderr
    yield f"$HOME/{folder}/results"
    devcluster.ssh(f"rm -rf ~/{folder}")


def _key(client, url: str) -> str:
    return re.search(r'name="submission_key" value="(\w+)"', client.get(url).content.decode())[1]


def _follow(job: Job, timeout: float = 180) -> None:
    """Polls as beat does until the job is final."""
    deadline = time.monotonic() + timeout
    while not job.is_final:
        assert time.monotonic() < deadline, f"still {job.state} after {timeout} s"
        tasks.poll_clusters.apply()
        job.refresh_from_db()
        time.sleep(1)


def _submitted(client, user, results: str, command: str, grid: str, **more: str) -> Job:
    """A sweep of short runs composed on the local cluster, submitted the composer's way."""
    call_command("register_devcluster", user.username, stdout=io.StringIO())
    name = f"sweep-{uuid.uuid4().hex[:6]}"
    form = LOCAL | {"hours": "0.05", "job_name": name, "command": command, "sweep_grid": grid}
    form |= {"results_dir": results, **more}
    form |= {"submit": "1", "submission_key": _key(client, "/jobs/new/")}
    assert client.post("/jobs/new/", form).status_code == 302
    sweep = Job.objects.get(owner=user, name=name)
    tasks.submit_job.apply(args=[sweep.pk])
    sweep.refresh_from_db()
    assert sweep.slurm_id, sweep.message
    return sweep


def _messages(response) -> str:
    return " ".join(str(message) for message in get_messages(response.wsgi_request))


def _rows(page: str) -> dict[int, list[str]]:
    """The Runs table's rows as the page shows them: run number -> its cells' text."""
    section = re.search(r'<section id="job-runs".*?</section>', page, re.S)
    assert section, "the page has a Runs section"
    rows = {}
    for number, cells in re.findall(r'data-run="(\d+)">(.*?)</tr>', section[0], re.S):
        texts = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", cells, re.S)
        rows[int(number)] = [html.unescape(re.sub(r"<[^>]+>", "", t)).strip() for t in texts]
    return rows


def test_a_grouped_sweeps_runs_are_read_from_runs_tsv_and_its_failed_runs_run_again(
    user_client, user, devcluster, seeded, results
):
    sweep = _submitted(user_client, user, results, COMMAND, GRID)
    assert 'SWEEP_RUNS="1 2 3 4"' in sweep.script  # short runs: one grouped job
    assert "#SBATCH --array" not in sweep.script
    _follow(sweep)
    assert (sweep.state, sweep.exit_code) == (JobState.FAILED, 3)  # its last failed run's

    page = user_client.get(sweep.get_absolute_url()).content.decode()
    rows = _rows(page)
    # Run, fail, seed, state, exit code, time, node, output.
    assert {n: row[:5] for n, row in rows.items()} == {
        1: ["1", "yes", "1", "Failed", "3"],
        2: ["2", "yes", "2", "Failed", "3"],
        3: ["3", "no", "1", "Completed", "0"],
        4: ["4", "no", "2", "Completed", "0"],
    }
    assert sweep.nodes.startswith("a100-")
    assert all(row[6] == sweep.nodes for row in rows.values()), rows  # Slurm's name for it
    assert "4 runs: 2 completed, 2 failed, 0 running, 0 waiting" in page
    failed = "run 1 (fail=yes seed=1), exit code 3; run 2 (fail=yes seed=2), exit code 3"
    assert f"Failed: {failed}." in page
    runs = listing.runs_of(sweep)
    assert [run.folder for run in runs.runs] == FOLDERS
    assert all(run.elapsed_seconds is not None for run in runs.runs)
    assert runs.note == ""

    assert "Re-run failed runs (2)" in page
    key = re.search(r'name="submission_key" value="(\w+)">\s*<button[^>]*>Re-run', page)[1]
    response = user_client.post(f"/jobs/{sweep.pk}/rerun-failed/", {"submission_key": key})
    again = Job.objects.get(rerun_of=sweep)
    assert response.status_code == 302 and response.url == again.get_absolute_url()
    assert grouped_runs(again.script) == ([1, 2], 4)  # only the failed runs, in one job
    # While they run again, the sweep offers no second re-run of them.
    page = user_client.get(sweep.get_absolute_url()).content.decode()
    assert "Re-run failed runs" not in page
    assert f"Its failed runs are running again as job {again}" in _messages(
        user_client.post(f"/jobs/{sweep.pk}/rerun-failed/", {"submission_key": "f" * 32})
    )
    assert Job.objects.filter(rerun_of=sweep).count() == 1
    tasks.submit_job.apply(args=[again.pk])
    again.refresh_from_db()
    assert again.slurm_id, again.message
    _follow(again)
    assert (again.state, again.exit_code) == (JobState.COMPLETED, 0)

    page = user_client.get(again.get_absolute_url()).content.decode()
    first = f'<a href="{sweep.get_absolute_url()}">'
    assert f"This job runs again the failed runs 1, 2 of {first}" in page
    rows = _rows(page)
    assert {n: row[:5] for n, row in rows.items()} == {
        1: ["1", "yes", "1", "Completed", "0"],
        2: ["2", "yes", "2", "Completed", "0"],
    }
    assert "Re-run failed runs" not in page
    page = user_client.get(sweep.get_absolute_url()).content.decode()
    assert f'were run again as <a href="{again.get_absolute_url()}">' in page
    # The sweep's own page reads its folder again once the re-run has ended (at most every
    # RUNS_READ_SECONDS): the two runs now end as their second try did, linked to it.
    read = RunsTable.objects.get(job=sweep).read_at
    time.sleep(max(0, reading.RUNS_READ_SECONDS - (timezone.now() - read).total_seconds()))
    page = user_client.get(sweep.get_absolute_url()).content.decode()
    rows = _rows(page)
    assert {n: row[:5] for n, row in rows.items()} == {
        1: ["1", "yes", "1", f"Completed (run again as {again})", "0"],
        2: ["2", "yes", "2", f"Completed (run again as {again})", "0"],
        3: ["3", "no", "1", "Completed", "0"],
        4: ["4", "no", "2", "Completed", "0"],
    }
    assert "4 runs: 4 completed, 0 failed" in page
    assert "Re-run failed runs" not in page
    # On the cluster, every run's line now says it passed, each in its own folder.
    table = devcluster.ssh(f"cat {results.replace('$HOME', '~')}/runs.tsv").stdout.splitlines()
    assert [line.split("\t")[:5] for line in table[1:]] == [
        ["1", FOLDERS[0], "yes", "1", "0"],
        ["2", FOLDERS[1], "yes", "2", "0"],
        ["3", FOLDERS[2], "no", "1", "0"],
        ["4", FOLDERS[3], "no", "2", "0"],
    ]


# Saves on Slurm's warning and stops, as a checkpointing program does; else works for 40 s.
SAVING = (
    "trap 'echo {seed} > \"$RESULTS_DIR/saved\"; exit 0' USR1; "
    'for i in $(seq 40); do sleep 1; done; echo {seed} > "$RESULTS_DIR/seed.txt"'
)


def test_a_grouped_run_stopped_by_the_warning_is_not_done_and_the_rest_wait(
    user_client, user, devcluster, seeded, results
):
    sweep = _submitted(user_client, user, results, SAVING, "seed = 1 2 3", checkpointing="on")
    assert 'SWEEP_RUNS="1 2 3"' in sweep.script
    # Slurm's warning (as --signal=B:USR1 sends it) once run 1 is under way.
    deadline = time.monotonic() + 120
    while devcluster.ssh(f"test -d {results}/run-001_seed-1").returncode:
        assert time.monotonic() < deadline, "run 1 never started"
        time.sleep(1)
    time.sleep(3)
    warned = devcluster.ssh(f"scancel --batch --signal=USR1 {sweep.slurm_id}")
    assert warned.returncode == 0, warned.stderr
    _follow(sweep)
    # It saved and stopped: not done. The runs after it were not started with minutes left.
    assert (sweep.state, sweep.exit_code) == (JobState.FAILED, 124)
    assert devcluster.ssh(f"cat {results}/run-001_seed-1/saved").stdout.strip() == "1"
    rows = _rows(user_client.get(sweep.get_absolute_url()).content.decode())
    # Run, seed, state, exit code.
    assert {n: row[2:4] for n, row in rows.items()} == {
        1: ["Failed", "124"],
        2: ["Failed", ""],
        3: ["Failed", ""],
    }, rows
    runs = listing.runs_of(sweep)
    assert [run.number for run in runs.failed] == [1, 2, 3]  # all three go again on a re-run
