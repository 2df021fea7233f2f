"""Right-sizing from history on the real local Slurm cluster: the same job, composed and
submitted the composer's way three times, holds a known amount of memory for a known time; composed
a fourth time, the composer proposes values computed from what sacct accounted for those three
jobs, and applying them changes the script and its salloc line.

Celery tasks run in-process here (`.apply()`), as in tests/test_jobs_cluster.py.
"""

import io
import math
import re
import time
import uuid

import pytest
from django.core.management import call_command

from guidance.engine.efficiency import MEMORY_STEP_MB, TIME_MARGIN, suggested_minutes
from guidance.engine.slurm_time import format_time
from jobs import tasks
from jobs.models import Job, JobState
from tests.test_validation import LOCAL

pytestmark = pytest.mark.django_db(transaction=True)

HOLD_MB = 1200
HOLD_SECONDS = 45  # longer than Slurm's accounting samples apart, so MaxRSS sees the peak
COMMAND = f"python3 -c 'import time; data = b\"x\" * ({HOLD_MB} << 20); time.sleep({HOLD_SECONDS})'"


@pytest.fixture
def form(devcluster, user, seeded):
    call_command("register_devcluster", user.username, stdout=io.StringIO())
    made = devcluster.ssh("mkdir -p ~/data && echo sample > ~/data/sample.txt")
    assert made.returncode == 0, made.stderr
    folder = f"history-{uuid.uuid4().hex[:8]}"
    yield LOCAL | {
        "job_name": f"hold-{uuid.uuid4().hex[:6]}",
        "command": COMMAND,
        "results_dir": f"$HOME/{folder}/results",
    }
    devcluster.ssh(f"rm -rf ~/{folder}")


def _key(client) -> str:
    page = client.get("/jobs/new/").content.decode()
    return re.search(r'name="submission_key" value="(\w+)"', page)[1]


def _run_once(client, user, form: dict) -> Job:
    """Composes and submits the job, then polls as beat does until sacct has its figures."""
    sent = form | {"submit": "1", "submission_key": _key(client)}
    assert client.post("/jobs/new/", sent).status_code == 302
    job = Job.objects.filter(owner=user, name=form["job_name"]).latest("created")
    tasks.submit_job.apply(args=[job.pk])
    job.refresh_from_db()
    assert job.slurm_id, job.message
    deadline = time.monotonic() + 240
    while not (job.is_final and job.max_rss_mb and job.elapsed_seconds):
        assert time.monotonic() < deadline, f"{job.state}, MaxRSS {job.max_rss_mb} after 240 s"
        tasks.poll_clusters.apply()
        job.refresh_from_db()
        time.sleep(1)
    assert job.state == JobState.COMPLETED, job.message
    return job


def test_the_fourth_composition_is_sized_from_sacct_figures_of_the_first_three(
    user_client, user, form
):
    runs = [_run_once(user_client, user, form) for _ in range(3)]
    for run in runs:  # what the job did, as sacct accounted it
        assert HOLD_SECONDS <= run.elapsed_seconds < HOLD_SECONDS + 60
        assert HOLD_MB * 0.9 <= run.max_rss_mb < HOLD_MB * 2

    longest = max(run.elapsed_seconds for run in runs)
    peak = max(run.max_rss_mb for run in runs)
    minutes = suggested_minutes(longest)
    megabytes = max(1, math.ceil(peak * TIME_MARGIN / MEMORY_STEP_MB)) * MEMORY_STEP_MB

    before = user_client.post("/jobs/new/", form)
    history = before.context["history"]
    assert len(history.kept) == 3 and history.left_out == ()
    proposal = {s.field: s.value for s in history.proposal}
    assert proposal["time_limit"] == format_time(minutes * 60)
    assert proposal["memory"] == f"{megabytes}M"
    page = before.content.decode()
    assert history.headline in page and 'name="apply_history"' in page

    applied = user_client.post("/jobs/new/", form | {"apply_history": "1"})
    composed, earlier = applied.context["composed"], before.context["composed"]
    assert composed.script != earlier.script
    assert f"#SBATCH --time={format_time(minutes * 60, days=True)}" in composed.script
    assert f"#SBATCH --mem={megabytes}M" in composed.script
    assert "# From earlier runs: Last 3 runs" in composed.script
    assert composed.salloc != earlier.salloc
    assert f"--mem={megabytes}M" in composed.salloc
    assert f"--time={format_time(min(minutes, 60) * 60)}" in composed.salloc
