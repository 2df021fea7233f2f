""" "Where should this run?" over two real, differently shaped Slurm clusters, both registered by
register_devcluster: "local" (A100 and RTX nodes, limits of 1 h and 30 min) and "local-b"
(`devcluster up --second`: H100 and L40S nodes, 2 h and 4 h). Both are ranked with Slurm's own
estimates; with the second's sshd stopped it is "unknown" within the budget; a composition made
for "local", moved to "local-b", is planned again for its partitions, GPU types and limits, and
the portal's own submit path runs it there to COMPLETED.

Celery tasks run in-process here (`.apply()`), as in tests/test_jobs_cluster.py.
"""

import io
import os
import re
import signal
import subprocess
import time
import uuid
from urllib.parse import urlencode

import pytest
from django.core.management import call_command

from guidance.engine.slurm_time import parse_seconds
from jobs import tasks
from jobs.cluster.gateway import gateway
from jobs.models import Job, JobState
from portal.models import ApiToken
from tests.devcluster import DEVCLUSTER
from tests.test_validation import LOCAL

pytestmark = pytest.mark.django_db(transaction=True)
BUDGET = 5
# Each partition's GPU type and MaxTime in minutes, as `devcluster up --second` writes them.
SECOND_LIMITS = {"gpu-h100": ("h100", 120), "gpu-l40s": ("l40s", 240)}


@pytest.fixture
def both(devcluster, second_devcluster, seeded, user, settings):
    settings.SOONER_BUDGET_SECONDS = BUDGET
    call_command("register_devcluster", user.username, stdout=io.StringIO())
    call_command("register_devcluster", user.username, "--second", stdout=io.StringIO())
    folder = f"where-{uuid.uuid4().hex[:8]}"
    # The data the job checks first. Both clusters run on this machine: their homes are one.
    made = second_devcluster.ssh("mkdir -p ~/data && echo sample > ~/data/sample.txt")
    assert made.returncode == 0, made.stderr
    yield LOCAL | {
        "job_name": f"where-{uuid.uuid4().hex[:6]}",
        "command": 'echo "ran on $SLURMD_NODENAME in $SLURM_JOB_PARTITION of $SLURM_CLUSTER_NAME"',
        "results_dir": f"$HOME/{folder}/results",
    }
    second_devcluster.ssh(f"rm -rf ~/{folder}")


def _where(client, user, form: dict) -> tuple[dict, float]:
    headers = {"Authorization": f"Bearer {ApiToken.issue(user, 'cli')[1]}"}
    job = {k: v for k, v in form.items() if v != "" and k != "modules"}
    began = time.monotonic()
    response = client.post("/api/v1/where", job, content_type="application/json", headers=headers)
    took = time.monotonic() - began
    assert response.status_code == 200, response.content
    return {p["cluster"]: p for p in response.json()["ranking"]}, took


def _sshd_pid(cluster) -> int:
    return int((cluster.lab / "run" / "sshd.pid").read_text().split()[0])


def test_both_are_ranked_with_slurms_estimates_and_a_stopped_one_is_unknown(
    client, user, both, second_devcluster
):
    ranking, _ = _where(client, user, both)
    assert set(ranking) == {"local", "local-b"}
    assert (ranking["local"]["partition"], ranking["local"]["gpu_type"]) == ("gpu-a100", "a100")
    assert ranking["local-b"]["partition"] in SECOND_LIMITS, ranking["local-b"]
    for place in ranking.values():
        assert place["fits"] and place["start"] and not place["start_problem"], place

    gateway.close_all()  # no connection kept open from the first ask: the sshd is really gone
    os.kill(_sshd_pid(second_devcluster), signal.SIGTERM)
    try:
        time.sleep(0.5)
        ranking, took = _where(client, user, both)
    finally:
        subprocess.run([str(DEVCLUSTER), "up", "--second"], check=True, capture_output=True)
    assert took < BUDGET
    assert ranking["local"]["start"], ranking["local"]
    assert ranking["local-b"]["start"] is None
    assert "127.0.0.1:2232" in ranking["local-b"]["start_problem"], ranking["local-b"]


def _directive(script: str, name: str) -> str:
    return re.search(rf"^#SBATCH --{name}=(\S+)", script, re.M)[1]


def _key(client) -> str:
    page = client.get("/jobs/new/").content.decode()
    return re.search(r'name="submission_key" value="(\w+)"', page)[1]


def _follow(job: Job, timeout: float = 120) -> None:
    """Polls as beat does until the job is final."""
    deadline = time.monotonic() + timeout
    while not job.is_final:
        assert time.monotonic() < deadline, f"still {job.state} after {timeout} s"
        tasks.poll_clusters.apply()
        job.refresh_from_db()
        time.sleep(0.5)


def test_a_composition_moved_to_the_second_is_planned_again_and_runs_there(user_client, user, both):
    on_first = user_client.post("/jobs/new/", both).context["composed"].script
    assert "--partition=gpu-a100" in on_first and "gpu:a100:1" in on_first

    moved = user_client.get(f"/jobs/new/where/go/?{urlencode(both | {'to': 'local-b'})}")
    assert moved.status_code == 302
    page = user_client.get(moved.url)
    text = page.content.decode()
    assert "now composed for Second dev cluster" in text
    assert "has no a100 GPUs" in text
    fields = page.context["form"].data.dict()
    assert fields["cluster"] == "local-b" and fields["gpu_type"] == ""

    script = page.context["composed"].script
    partition = _directive(script, "partition")
    gpu_type, max_minutes = SECOND_LIMITS[partition]
    assert _directive(script, "gres") == f"gpu:{gpu_type}:1", script
    minutes = parse_seconds(_directive(script, "time")) / 60
    assert 30 <= minutes <= max_minutes  # the half hour asked for, within that partition's limit
    # Memory from local-b's policy (3000 MB a GPU, not 2000).
    assert _directive(script, "mem") != _directive(on_first, "mem")

    sent = fields | {"submit": "1", "submission_key": _key(user_client)}
    assert user_client.post("/jobs/new/", sent).status_code == 302
    job = Job.objects.filter(owner=user, name=both["job_name"]).latest("created")
    assert job.account.cluster.slug == "local-b"
    tasks.submit_job.apply(args=[job.pk])
    job.refresh_from_db()
    assert int(job.slurm_id) >= 5_000_000, job.message  # the second cluster's ids
    _follow(job)
    assert job.state == JobState.COMPLETED, job.message
    output = user_client.get(f"/jobs/{job.pk}/output/?stream=out").content.decode()
    node = "h100-1" if gpu_type == "h100" else "l40s-1"
    assert f"ran on {node} in {partition} of otherlab" in output, output
