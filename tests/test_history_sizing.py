"""Right-sizing from history in the composer and the API: the user's own earlier runs of the job,
what they used, and one click to ask for that."""

from datetime import timedelta

import pytest
from django.utils import timezone

from guidance.models import Cluster
from jobs.models import Composition, GpuDevice, Job, JobOrigin, JobState
from portal.models import ApiToken
from tests.test_compose_page import GOOD
from tests.test_job_pages import _account

# Four GPUs for 12 hours, as the runs below asked.
FORM = GOOD | {"gpu_count": "4", "multi_gpu": "on", "hours": "12"}
HOURS = 3600


def past_job(owner, n: int, *, state=JobState.COMPLETED, elapsed=2 * HOURS, rss=40_000, **kw):
    cluster = Cluster.objects.get(slug="narval")
    account = owner.cluster_accounts.filter(cluster=cluster).first() or _account(owner, cluster)
    composition = Composition.objects.filter(owner=owner).first() or Composition.objects.create(
        owner=owner, name="resnet", fields=FORM, script="#!/bin/bash\n"
    )
    started = timezone.now() - timedelta(days=10 - n)
    figures = dict(
        owner=owner,
        account=account,
        composition=composition,
        name="resnet",
        script="#!/bin/bash\n",
        slurm_id=str(1000 + n),
        state=state,
        started=started,
        ended=started + timedelta(seconds=elapsed),
        elapsed_seconds=elapsed,
        time_limit_seconds=12 * HOURS,
        max_rss_mb=rss,
        requested_memory_mb=256_000,
        cpus=48,
        cpu_seconds=elapsed * 12,
        gpus=4,
        gpu_utilization=20,
    )
    job = Job.objects.create(**(figures | kw))
    GpuDevice.objects.create(job=job, node="ng1", uuid=f"GPU-{n}", peak_memory_mb=30_000)
    return job


@pytest.fixture
def runs(user, seeded):
    """Three runs of the composition, the longest 2 h 40 with 50 GB, and one that failed."""
    past_job(user, 1, elapsed=2 * HOURS + 10 * 60)
    past_job(user, 2, elapsed=2 * HOURS + 40 * 60, rss=50 * 1024)
    past_job(user, 3, state=JobState.FAILED, elapsed=11 * HOURS)
    # Submitted with sbatch by hand, read from Slurm's accounting: it counts by its name.
    past_job(user, 4, origin=JobOrigin.OUTSIDE, composition=None, elapsed=2 * HOURS)


def test_the_composer_shows_what_the_earlier_runs_used(user_client, runs):
    page = user_client.get("/jobs/new/", FORM).content.decode()
    assert 'data-runs="3"' in page
    assert "Last 3 runs: at most 2 h 40 of 12 h, 50 GB of 250 GB, GPUs 20% busy" in page
    assert "ask 3 h 30, 63 GB, 1 GPU" in page
    assert "job 1003: it failed" in page
    assert "GPU memory peak" in page and "29 GB" in page
    assert 'name="apply_history"' in page


def test_the_live_update_shows_them_in_the_advice(user_client, runs):
    panel = user_client.post(
        "/jobs/new/", FORM | {"live": "1"}, headers={"HX-Request": "true"}
    ).content.decode()
    assert 'id="panel"' in panel and "Last 3 runs" in panel


def test_one_click_applies_them_as_overrides_with_their_reasons(user_client, runs):
    before = user_client.post("/jobs/new/", FORM).context["composed"]
    page = user_client.post("/jobs/new/", FORM | {"apply_history": "1"})
    form = page.context["form"]
    assert form.data["time_limit"] == "3:30:00"
    assert form.data["memory"] == f"{63 * 1024}M"
    assert form.data["gpu_count"] == "1"
    composed = page.context["composed"]
    assert "#SBATCH --time=0-03:30:00" in composed.script
    assert "# From earlier runs: Last 3 runs: at most 2 h 40 of 12 h" in composed.script
    assert "# From earlier runs: The longest of 3 runs took 2 h 40" in composed.script
    assert composed.salloc != before.salloc
    assert f"--mem={63 * 1024}M" in composed.salloc
    assert "Set from 3 earlier runs" in page.content.decode()


def test_a_value_changed_after_applying_loses_its_reason(user_client, runs):
    applied = FORM | {"time_limit": "5:00:00", "memory": f"{63 * 1024}M"}
    script = user_client.post("/jobs/new/", applied).context["composed"].script
    assert "The longest of 3 runs" not in script
    assert "The runs used at most 51200 MB" in script


def test_a_script_saved_with_the_values_is_not_taken_for_a_hand_edit(user_client, runs):
    applied = FORM | {"time_limit": "3:30:00", "memory": f"{63 * 1024}M", "gpu_count": "1"}
    script = user_client.post("/jobs/new/", applied).context["composed"].script
    user_client.post("/jobs/new/", applied | {"script_text": script, "save": "1"})
    saved = Composition.objects.filter(owner__username="alice").latest("created")
    assert not saved.edited and "From earlier runs" in saved.script


def test_another_users_jobs_never_count(client, runs, django_user_model):
    stranger = django_user_model.objects.create_user("mallory", password="pw")
    for n in range(5):
        past_job(stranger, 10 + n, elapsed=20 * HOURS)
    client.force_login(stranger)
    page = client.get("/jobs/new/", FORM).content.decode()
    assert "Last 5 runs: at most 20 h of 12 h" in page  # theirs alone, not alice's 3
    alice = Job.objects.filter(owner__username="alice").first().owner
    client.force_login(alice)
    page = client.get("/jobs/new/", FORM).content.decode()
    assert "Last 3 runs: at most 2 h 40" in page


def test_nothing_shows_without_earlier_runs(user_client, seeded):
    page = user_client.get("/jobs/new/", FORM).content.decode()
    assert 'class="history"' not in page
    response = user_client.post("/jobs/new/", FORM | {"apply_history": "1"})
    assert response.status_code == 200
    assert "The earlier runs propose nothing" in response.content.decode()


def test_one_run_is_shown_but_proposes_nothing(user_client, user, seeded):
    past_job(user, 1)
    page = user_client.get("/jobs/new/", FORM).content.decode()
    assert "Last 1 run: at most 2 h" in page
    assert "at least two finished runs" in page
    assert 'name="apply_history"' not in page


# --- The API ------------------------------------------------------------------------------------

API_JOB = {
    "cluster": "narval",
    "workload": "training",
    "dataset_gb": 50,
    "gpu_count": 4,
    "multi_gpu": True,
    "hours": 12,
    "job_name": "resnet",
    "account": "def-someuser",
    "data_path": "/project/def-someuser/data",
    "results_dir": "$HOME/results",
    "modules": ["python/3.11", "cuda"],
    "command": 'python train.py --data "$STAGE_DIR"',
}


def _script(client, user, **changes):
    headers = {"Authorization": f"Bearer {ApiToken.issue(user, 'cli')[1]}"}
    return client.post(
        "/api/v1/script", API_JOB | changes, content_type="application/json", headers=headers
    )


def test_the_apis_recommendation_carries_the_same_proposal(client, user, runs):
    body = _script(client, user).json()
    found = body["recommendation"]["history"]
    assert found["runs"] == 3
    assert found["headline"].startswith("Last 3 runs: at most 2 h 40 of 12 h")
    assert {p["field"]: p["value"] for p in found["proposal"]} == {
        "time_limit": "3:30:00",
        "memory": f"{63 * 1024}M",
        "gpu_count": "1",
    }
    assert found["left_out"] == [{"run": "job 1003", "why": found["left_out"][0]["why"]}]
    # Sent back as fields, they are applied and their reasons go into the script.
    values = {p["field"]: p["value"] for p in found["proposal"]}
    values["gpu_count"] = int(values["gpu_count"])
    applied = _script(client, user, **values).json()
    assert "#SBATCH --time=0-03:30:00" in applied["script"]
    assert "# From earlier runs: Last 3 runs" in applied["script"]


def test_the_api_shows_no_one_elses_runs(client, runs, django_user_model):
    stranger = django_user_model.objects.create_user("mallory", password="pw")
    assert _script(client, stranger).json()["recommendation"]["history"] is None


def test_the_openapi_schema_documents_the_history(client, seeded):
    schema = client.get("/api/v1/openapi.json").json()
    history = schema["components"]["schemas"]["HistoryOut"]
    assert "proposal" in history["properties"]
    assert "Set by hand" in str(schema["components"]["schemas"]["ProposedOut"])


def test_a_command_saved_as_the_browser_sent_it_still_matches(user_client, user, seeded):
    # A textarea sends CRLF line breaks, and the composition keeps what was sent.
    command = "cd $HOME/code\r\npython train.py\r\n"
    Composition.objects.create(
        owner=user, name="two lines", fields=FORM | {"command": command}, script="#!/bin/bash\n"
    )
    past_job(user, 1, name="other")
    past_job(user, 2, name="other")
    page = user_client.get("/jobs/new/", FORM | {"command": "cd $HOME/code\npython train.py"})
    assert "Last 2 runs" in page.content.decode()


def test_a_job_with_another_command_or_name_does_not_count(user_client, runs):
    page = user_client.get("/jobs/new/", FORM | {"command": "python other.py", "job_name": "x"})
    assert 'class="history"' not in page.content.decode()
