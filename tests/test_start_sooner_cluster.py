""" "Could it start sooner?" on real Slurm: a job waiting for busy a100 nodes is offered the idle
rtx node with Slurm's estimate, and taking it leaves exactly one job: the new one."""

import io
import re
import time
import uuid

import pytest
from django.core.management import call_command

from jobs import tasks
from jobs.models import Job, JobOrigin, JobState
from tests.test_validation import LOCAL

pytestmark = pytest.mark.django_db(transaction=True)
HTMX = {"HX-Request": "true"}


@pytest.fixture
def fillers(devcluster):
    """Both a100 nodes busy for three minutes: an a100 job waits."""
    name = f"fill-{uuid.uuid4().hex[:8]}"
    for _ in range(2):
        said = devcluster.ssh(
            f"sbatch --parsable --job-name={name} --partition=gpu-a100 --gres=gpu:a100:2 "
            "--time=00:03:00 --output=/dev/null --wrap 'sleep 170'"
        )
        assert said.returncode == 0, said.stderr
    deadline = time.monotonic() + 30
    while devcluster.ssh(f"squeue -h -n {name} -t R -o %i").stdout.split().__len__() < 2:
        assert time.monotonic() < deadline, "the a100 nodes never filled"
        time.sleep(0.5)
    yield
    devcluster.ssh(f"scancel --name={name}")


def _key(client, url: str) -> str:
    return re.search(r'name="submission_key" value="(\w+)"', client.get(url).content.decode())[1]


def _alive(devcluster, job: Job) -> bool:
    said = devcluster.ssh(f"squeue -h -j {job.slurm_id} -o %T").stdout.strip()
    return said not in ("", "CANCELLED", "COMPLETED")


def test_a_waiting_job_moves_to_an_idle_gpu_type_and_leaves_one_job(
    user_client, user, devcluster, seeded, fillers
):
    call_command("register_devcluster", user.username, stdout=io.StringIO())
    # The job's data, which its script checks first: without it, the job that replaces the
    # waiting one would stop at once (exit 66), and whether it is still listed when looked for
    # would hang on timing.
    made = devcluster.ssh("mkdir -p ~/data && echo sample > ~/data/sample.txt")
    assert made.returncode == 0, made.stderr
    form = LOCAL | {"hours": "0.2", "job_name": "sooner", "command": "sleep 20"}
    form |= {"submit": "1", "submission_key": _key(user_client, "/jobs/new/")}
    assert user_client.post("/jobs/new/", form).status_code == 302
    waiting = Job.objects.get(owner=user, name="sooner")
    tasks.submit_job.apply(args=[waiting.pk])
    tasks.poll_clusters.apply()
    waiting.refresh_from_db()
    assert waiting.state == JobState.PENDING

    assert "Could it start sooner?" in user_client.get(waiting.get_absolute_url()).content.decode()
    began = time.monotonic()
    page = user_client.get(f"/jobs/{waiting.pk}/sooner/", headers=HTMX).content.decode()
    assert time.monotonic() - began < 15  # every estimate asked at once, within the budget
    assert "As it is" in page
    rtx = re.search(r"<tr class=\"is-sooner\"[^>]*>\s*<td>On gpu-rtx \(rtx GPUs\)</td>", page)
    assert rtx, page

    key = re.search(r'name="submission_key" value="(\w+)"', page)[1]
    choice = {"partition": "gpu-rtx", "gpu_type": "rtx", "submission_key": key}
    assert user_client.post(f"/jobs/{waiting.pk}/sooner/", choice).status_code == 302
    assert user_client.post(f"/jobs/{waiting.pk}/sooner/", choice).status_code == 302  # twice
    new = Job.objects.get(replaces=waiting)
    assert _alive(devcluster, waiting)  # not cancelled before Slurm has the new one

    tasks.submit_job.apply(args=[new.pk])
    new.refresh_from_db()
    assert new.slurm_id and "#SBATCH --partition=gpu-rtx" in new.script
    assert not _alive(devcluster, waiting) and _alive(devcluster, new)
    deadline = time.monotonic() + 30
    while not waiting.is_final and time.monotonic() < deadline:  # sacct has the last word
        tasks.poll_clusters.apply()
        waiting.refresh_from_db()
        time.sleep(0.5)
    assert waiting.state == JobState.CANCELLED
    assert waiting.events.filter(detail__contains=f"replaced by Slurm job {new.slurm_id}").exists()
    mine = Job.objects.filter(owner=user, origin=JobOrigin.PORTAL)
    assert list(mine.exclude(state=JobState.CANCELLED)) == [new]
    devcluster.ssh(f"scancel {new.slurm_id}")
