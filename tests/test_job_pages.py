"""Job pages read the database only: who sees what, filters, and when live updates stop."""

import re

import pytest
from django.test import Client

from guidance.models import Cluster
from jobs.cluster import keys
from jobs.compose import sending
from jobs.models import ClusterAccount, Job, JobState
from tests.test_compose_page import GOOD


@pytest.fixture
def cluster(seeded):
    return Cluster.objects.get(slug="narval")


def _account(owner, cluster) -> ClusterAccount:
    pair = keys.generate_keypair()
    return ClusterAccount.objects.create(
        owner=owner,
        cluster=cluster,
        username=owner.username,
        public_key=pair.public_line,
        private_key_encrypted=keys.encrypt(pair.private_pem),
    )


@pytest.fixture
def job(user, cluster):
    return Job.objects.create(
        owner=user,
        account=_account(user, cluster),
        name="resnet",
        script="#!/bin/bash\necho hi\n",
        slurm_id="1234",
        state=JobState.RUNNING,
    )


@pytest.fixture
def stranger_client(django_user_model):
    client = Client()
    client.force_login(django_user_model.objects.create_user("mallory", password="x"))
    return client


def test_the_owner_sees_the_job(user_client, job):
    page = user_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "resnet" in page and "Slurm job 1234" in page
    assert 'hx-trigger="every 3s"' in page  # still running: the page keeps asking


def test_another_user_gets_404_everywhere(stranger_client, job):
    for url in (f"/jobs/{job.pk}/", f"/jobs/{job.pk}/output/?stream=out"):
        assert stranger_client.get(url).status_code == 404
    for url in (f"/jobs/{job.pk}/cancel/", f"/jobs/{job.pk}/retry/"):
        assert stranger_client.post(url).status_code == 404
    assert "resnet" not in stranger_client.get("/jobs/").content.decode()


def test_no_page_shows_a_private_key(user_client, job):
    private = keys.decrypt(job.account.private_key_encrypted)
    secret_line = private.splitlines()[1]
    for url in ("/jobs/", f"/jobs/{job.pk}/", "/jobs/logins/"):
        page = user_client.get(url).content.decode()
        assert secret_line not in page
        assert job.account.private_key_encrypted not in page


def test_live_updates_stop_when_the_job_is_final(user_client, job):
    headers = {"HX-Request": "true"}
    assert user_client.get(f"/jobs/{job.pk}/", headers=headers).status_code == 200
    job.state, job.exit_code = JobState.COMPLETED, 0
    job.save()
    response = user_client.get(f"/jobs/{job.pk}/", headers=headers)
    assert response.status_code == 286
    assert "Completed" in response.content.decode()
    assert user_client.get("/jobs/", headers=headers).status_code == 286


def test_the_list_filters_by_state_and_cluster(user_client, job, user):
    Job.objects.create(
        owner=user, account=job.account, name="done", script="x", state=JobState.COMPLETED
    )
    page = user_client.get("/jobs/", {"state": "RUNNING"}).content.decode()
    assert "resnet" in page and ">done<" not in page
    page = user_client.get("/jobs/", {"cluster": "cedar"}).content.decode()
    assert "resnet" not in page


def test_a_stale_job_says_since_when(user_client, job):
    job.stale = True
    job.save()
    page = user_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "The cluster could not be reached" in page


def test_submitting_without_a_login_keeps_the_composition(user_client, user, seeded):
    response = user_client.post("/jobs/new/", GOOD | {"submit": "1"})
    assert response.status_code == 302 and response["Location"] == "/jobs/logins/"
    assert user.compositions.count() == 1
    assert not Job.objects.exists()


def test_the_cancel_button_leaves_with_the_live_update_that_says_the_job_ended(user_client, job):
    htmx = {"HX-Request": "true"}
    assert "Cancel the job" in user_client.get(f"/jobs/{job.pk}/", headers=htmx).content.decode()
    job.state = JobState.COMPLETED
    job.save()
    response = user_client.get(f"/jobs/{job.pk}/", headers=htmx)
    assert response.status_code == 286 and "Completed" in response.content.decode()
    assert "Cancel the job" not in response.content.decode()


def _submit_page_key(client, url: str) -> str:
    page = client.get(url).content.decode()
    return re.search(r'name="submission_key" value="([0-9a-f]{32})"', page)[1]


def test_save_and_submit_clicked_twice_makes_one_job(user_client, user, cluster):
    _account(user, cluster)
    key = _submit_page_key(user_client, "/jobs/new/")
    form = GOOD | {"submit": "1", "submission_key": key}
    first = user_client.post("/jobs/new/", form)
    second = user_client.post("/jobs/new/", form, follow=True)
    job = Job.objects.get()
    assert first["Location"] == second.redirect_chain[-1][0] == job.get_absolute_url()
    assert "This form was sent already: here is the job it made." in second.content.decode()
    assert user.compositions.count() == 1
    assert [e.detail for e in job.events.all()] == ["Queued for submission."]

    # The composer shown again is a new form: it makes a new job.
    again = GOOD | {"submit": "1", "submission_key": _submit_page_key(user_client, "/jobs/new/")}
    user_client.post("/jobs/new/", again)
    assert Job.objects.count() == 2


def test_a_saved_composition_submitted_twice_makes_one_job(user_client, user, cluster):
    _account(user, cluster)
    user_client.post("/jobs/new/", GOOD | {"save": "1"})
    composition = user.compositions.get()
    key = _submit_page_key(user_client, composition.get_absolute_url())
    update = f"/jobs/compositions/{composition.pk}/update/"
    for _ in range(2):
        user_client.post(update, {"submit": "1", "submission_key": key})
    assert Job.objects.filter(composition=composition).count() == 1


def test_submission_keys_are_each_users_own(user_client, user, cluster, stranger_client):
    _account(user, cluster)
    key = _submit_page_key(user_client, "/jobs/new/")
    user_client.post("/jobs/new/", GOOD | {"submit": "1", "submission_key": key})
    mallory = type(user).objects.get(username="mallory")
    _account(mallory, cluster)
    response = stranger_client.post("/jobs/new/", GOOD | {"submit": "1", "submission_key": key})
    theirs = Job.objects.get(owner=mallory)
    assert response["Location"] == theirs.get_absolute_url()  # not alice's job


def test_two_clicks_that_race_make_one_job_and_one_composition(
    user_client, user, cluster, monkeypatch
):
    # Both pass the first look before either has saved: the second one's job breaks the key's
    # uniqueness, and it leaves with the first one's job and nothing of its own.
    _account(user, cluster)
    key = _submit_page_key(user_client, "/jobs/new/")
    form = GOOD | {"submit": "1", "submission_key": key}
    first = user_client.post("/jobs/new/", form)
    looks = []  # the views' look, then send()'s: both as if before the first one saved
    real = sending.already_sent

    def late_look(request):
        looks.append(request)
        return None if len(looks) <= 2 else real(request)

    monkeypatch.setattr(sending, "already_sent", late_look)
    second = user_client.post("/jobs/new/", form)
    job = Job.objects.get()
    assert second["Location"] == first["Location"] == job.get_absolute_url()
    assert user.compositions.count() == 1
