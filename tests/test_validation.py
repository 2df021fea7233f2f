"""“Check with Slurm”: sbatch --test-only on the real local cluster, from the composer and from a
saved composition; nothing is submitted."""

import io
import re
from pathlib import Path

import pytest
from django.core.management import call_command

from jobs.models import Composition, Job
from jobs.slurm.sbatch import parse_test_only
from jobs.slurm.values import SlurmParseError
from tests.test_compose_page import GOOD

OUTPUT = Path(__file__).parent / "slurm_output"

LOCAL = GOOD | {
    "cluster": "local",
    "account": "",
    "dataset_gb": "1",
    "data_location": "home",
    "data_path": "$HOME/data",
    "gpu_type": "a100",
    "hours": "0.5",
    "modules": "",
    "results_dir": "$HOME/results",
}


@pytest.fixture
def registered(devcluster, seeded, user):
    call_command("register_devcluster", user.username, stdout=io.StringIO())


def _squeue_count(devcluster) -> int:
    return len(
        devcluster.ssh("squeue --noheader --states=all --user=portaltest").stdout.split("\n")
    )


def test_it_reads_when_and_where_a_job_would_start():
    would = parse_test_only((OUTPUT / "sbatch_test_only_two_nodes.txt").read_text())
    assert (would.cpus, would.nodes, would.partition) == (2, ["a100-1", "a100-2"], "gpu-a100")
    assert f"{would.start:%Y-%m-%d %H:%M}" == "2026-11-22 05:43"


def test_an_answer_without_a_start_time_is_a_parse_error():
    with pytest.raises(SlurmParseError):
        parse_test_only((OUTPUT / "sbatch_test_only_too_long.txt").read_text())


def test_the_composer_shows_where_and_when_the_job_would_start(user_client, registered, devcluster):
    jobs_before = _squeue_count(devcluster)
    response = user_client.post(
        "/jobs/new/", LOCAL | {"validate": "1"}, headers={"HX-Request": "true"}
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert "Slurm would accept this script" in page, page
    assert "in partition gpu-a100" in page and "It would start around" in page
    assert "Nothing was submitted" in page
    assert _squeue_count(devcluster) == jobs_before
    assert not Job.objects.exists() and not Composition.objects.exists()


def test_slurms_refusal_shows_in_its_words_and_plain_ones(user_client, registered):
    script = user_client.post("/jobs/new/", LOCAL | {"validate": "1"}).context["composed"].script
    too_long = re.sub(r"--time=\S+", "--time=05:00:00", script)
    assert too_long != script
    data = LOCAL | {"validate": "1", "script_text": too_long}
    page = user_client.post("/jobs/new/", data).content.decode()
    assert "Slurm would refuse this script" in page
    assert "Requested time limit is invalid" in page
    assert "over the partition&#x27;s limit" in page
    assert "05:00:00" in page  # the edited script is still in the editor


def test_without_a_login_it_says_how_to_get_one(user_client, seeded):
    page = user_client.post("/jobs/new/", GOOD | {"validate": "1"}).content.decode()
    assert "Set up your login on" in page and "/jobs/logins/" in page


def test_a_saved_composition_can_be_checked(user_client, user, registered):
    script = user_client.post("/jobs/new/", LOCAL | {"validate": "1"}).context["composed"].script
    composition = Composition.objects.create(owner=user, name="c", fields=LOCAL, script=script)
    response = user_client.post(f"/jobs/compositions/{composition.pk}/update/", {"validate": "1"})
    assert "Slurm would accept this script" in response.content.decode()


def test_another_users_composition_cannot_be_checked(client, django_user_model, user, seeded):
    composition = Composition.objects.create(owner=user, name="c", fields=LOCAL, script="x")
    client.force_login(django_user_model.objects.create_user("mallory"))
    response = client.post(f"/jobs/compositions/{composition.pk}/update/", {"validate": "1"})
    assert response.status_code == 404
