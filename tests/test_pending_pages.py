"""A waiting job's page and list row: why it waits in words, when it should start, and its place
in the queue; read from the database alone (no cluster)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from jobs.models import Job, JobState
from tests.test_job_pages import _account


@pytest.fixture
def waiting(user, seeded):
    from guidance.models import Cluster

    return Job.objects.create(
        owner=user,
        account=_account(user, Cluster.objects.get(slug="narval")),
        name="waits",
        script="#!/bin/bash\necho hi\n",
        slurm_id="77",
        state=JobState.PENDING,
        reason="QOSMaxGRESPerUser",
        partition="gpu-a100",
        expected_start=timezone.now() + timedelta(hours=2, minutes=10, seconds=20),
    )


def _both(client, job: Job) -> list[str]:
    """The job page, its htmx refresh and the jobs list (and its refresh): all must say it."""
    htmx = {"HTTP_HX_REQUEST": "true"}
    return [
        client.get(f"/jobs/{job.pk}/").content.decode(),
        client.get(f"/jobs/{job.pk}/", **htmx).content.decode(),
        client.get("/jobs/").content.decode(),
        client.get("/jobs/", **htmx).content.decode(),
    ]


def test_a_waiting_job_says_why_and_what_to_do_with_slurms_code_beside(user_client, waiting):
    for page in _both(user_client, waiting):
        assert "as many GPUs as its QOS allows one user at a time" in page
        assert "<code>sacctmgr show qos</code>" in page  # what to do, with its command
        assert '<small class="reason-code"' in page and ">QOSMaxGRESPerUser</small>" in page
        assert "(QOSMaxGRESPerUser)" not in page  # the bare code is no longer the explanation


def test_a_waiting_job_says_when_slurm_expects_to_start_it(user_client, waiting):
    at = timezone.localtime(waiting.expected_start).strftime("%Y-%m-%d %H:%M")
    for page in _both(user_client, waiting):
        assert f"Slurm expects to start it at {at}, in about 2 h 10 min." in page


def test_without_an_estimate_it_says_so(user_client, waiting):
    Job.objects.filter(pk=waiting.pk).update(expected_start=None)
    for page in _both(user_client, waiting):
        assert "Slurm has not estimated a start yet." in page


def test_its_place_in_the_partition_shows_once_known(user_client, waiting):
    assert "before it by priority" not in user_client.get(f"/jobs/{waiting.pk}/").content.decode()
    for ahead, text in [
        (3, "3 pending jobs in gpu-a100 come before it by priority."),
        (1, "1 pending job in gpu-a100 comes before it by priority."),
        (0, "No pending job in gpu-a100 comes before it by priority."),
    ]:
        Job.objects.filter(pk=waiting.pk).update(ahead_in_queue=ahead)
        for page in _both(user_client, waiting):
            assert text in page


def test_a_code_the_portal_does_not_know_shows_as_itself(user_client, waiting):
    Job.objects.filter(pk=waiting.pk).update(reason="SomeReasonOfSlurm25")
    for page in _both(user_client, waiting):
        assert ">SomeReasonOfSlurm25</small>" in page


def test_a_running_job_says_nothing_of_waiting(user_client, waiting):
    Job.objects.filter(pk=waiting.pk).update(state=JobState.RUNNING, reason="", nodes="a100-1")
    for page in _both(user_client, waiting):
        assert "expects to start" not in page and "not estimated a start" not in page


def test_a_held_job_says_how_to_release_it(user_client, waiting):
    Job.objects.filter(pk=waiting.pk).update(reason="JobHeldUser", expected_start=None)
    page = user_client.get(f"/jobs/{waiting.pk}/").content.decode()
    assert (
        "on hold, put there by you" in page and "<code>scontrol release &lt;id&gt;</code>" in page
    )


def test_another_user_sees_none_of_it(client, django_user_model, waiting):
    client.force_login(django_user_model.objects.create_user("mallory", password="x"))
    assert client.get(f"/jobs/{waiting.pk}/").status_code == 404
    assert "QOSMaxGRESPerUser" not in client.get("/jobs/").content.decode()
