"""A data path, checked on the real cluster on request, and a job whose data is missing: it stops
at once and its page says why in one line (jobs.compose.script's portal_stop, read by the
poller)."""

import pathlib
import shutil
import subprocess
import uuid
from collections.abc import Iterator

import pytest

from jobs.compose.forms import ComposeForm
from jobs.compose.from_form import compose
from jobs.models import Job, JobState
from jobs.script_markers import STOP_STATUS
from tests.test_jobs_cluster import _follow, _submit

HOME = pathlib.Path("/home/portaltest")


@pytest.fixture
def data() -> Iterator[pathlib.Path]:
    root = HOME / f"data-{uuid.uuid4().hex[:8]}"
    (root / "images").mkdir(parents=True)
    for i in range(3):
        (root / "images" / f"{i}.txt").write_text(f"image {i}\n")
    (root / "images.tar").write_bytes(b"\0" * 2_500_000)
    subprocess.run(["chown", "-R", "portaltest:", str(root)], check=True)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def _form(data_path: str) -> dict:
    """A job for the dev cluster's own site ("local"), as the composer takes it."""
    return {
        "cluster": "local",
        "job_name": f"d-{uuid.uuid4().hex[:6]}",
        "account": "portal",
        "workload": "training",
        "dataset_gb": "50",
        "data_path": data_path,
        "gpu_type": "a100",
        "gpu_count": "1",
        "hours": "0.1",
        "nodes": "1",
        "similar_runs": "1",
        "environment": "none",
        "command": 'ls "$DATA_PATH" > "$RESULTS_DIR/listing.txt"',
        "results_dir": f"$HOME/results-{uuid.uuid4().hex[:6]}",
    }


def test_a_path_is_checked_through_the_users_login(local_login, user_client, data):
    def check(path: str, kind: str = "") -> str:
        answer = user_client.post(
            "/jobs/new/check-path/", {"cluster": "local", "data_path": path, "data_kind": kind}
        )
        assert answer.status_code == 200
        return answer.content.decode()

    assert "is a folder of 3 files" in check(f"~/{data.name}/images")
    assert "taken as an archive" in check(f"$HOME/{data.name}/images.tar")
    assert "2.5 MB" in check(f"$HOME/{data.name}/images.tar")
    assert "choose &#x27;A folder&#x27;" in check(f"$HOME/{data.name}/images", "archive")
    assert "Nothing is at /home/portaltest/nowhere" in check("~/nowhere")
    # Every variable of a path is the job's, wherever it stands; the rest is literal.
    assert "is a folder of 3 files" in check(f"/home/$USER/{data.name}/images")
    assert "Nothing is at /home/portaltest/$(id)" in check("/home/${USER}/$(id)")


def test_without_a_login_the_check_says_how_to_get_one(seeded, user_client):
    answer = user_client.post("/jobs/new/check-path/", {"cluster": "narval", "data_path": "~/d"})
    said = "Set up your login on Narval to check paths there"
    assert said in answer.content.decode()


def _run(login, form: ComposeForm) -> Job:
    """Composes the form's script, submits it through the portal and follows it to its end."""
    composed = compose(form)
    assert composed is not None, form.errors
    job = _submit(
        Job.objects.create(
            owner=login.owner, account=login, name=form.cleaned_data["job_name"],
            script=composed.script,
        )
    )  # fmt: skip
    _follow(job, timeout=90)
    return job


def test_a_job_whose_data_is_missing_fails_at_once_and_says_why(local_login, user_client):
    job = _run(local_login, ComposeForm(_form("$HOME/no-such-dataset")))
    assert (job.state, job.exit_code) == (JobState.FAILED, STOP_STATUS)
    assert job.message.startswith("The data path /home/portaltest/no-such-dataset does not exist")
    page = user_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "The data path /home/portaltest/no-such-dataset does not exist" in page


def test_a_job_whose_data_is_there_completes(local_login, data):
    form = ComposeForm(_form(f"$HOME/{data.name}/images"))
    job = _run(local_login, form)
    assert (job.state, job.exit_code, job.message) == (JobState.COMPLETED, 0, "")
    results = HOME / form.cleaned_data["results_dir"].removeprefix("$HOME/")
    assert (results / "listing.txt").read_text().split() == ["0.txt", "1.txt", "2.txt"]
