"""The home page: what the portal does for a visitor; a user's day starts there."""

import re

import pytest
from django.urls import reverse

from guidance.models import Cluster
from jobs.models import ClusterAccount, Composition, Job, JobState


@pytest.fixture
def narval_login(user, seeded) -> ClusterAccount:
    return ClusterAccount.objects.create(
        owner=user,
        cluster=Cluster.objects.get(slug="narval"),
        username="alice",
        public_key="ssh-ed25519 AAAA",
        private_key_encrypted="not used here",
    )


def _job(account: ClusterAccount, name: str, state: str, **kw) -> Job:
    return Job.objects.create(
        owner=account.owner, account=account, name=name, script="#!/bin/bash\n", state=state, **kw
    )


def test_a_visitor_is_told_what_the_portal_does_and_how_to_sign_in(client, db):
    page = client.get("/")
    assert page.status_code == 200
    text = page.text
    assert "which GPUs to ask for, where your data should live" in text
    assert "submits it over SSH" in text and "GPUs sit idle" in text
    assert f'href="{reverse("login")}"' in text
    assert "Running and waiting" not in text


def test_a_user_starts_the_day_with_their_jobs_compositions_and_clusters(
    user_client, user, narval_login
):
    _job(narval_login, "resnet-running", JobState.RUNNING, gpu_utilization=37.4)
    _job(narval_login, "bert-waiting", JobState.PENDING, reason="Priority")
    _job(narval_login, "old-done", JobState.COMPLETED)
    composition = Composition.objects.create(owner=user, name="vit sweep", fields={}, script="")
    text = user_client.get("/").text

    assert f'href="{reverse("jobs:compose")}"' in text and f'href="{reverse("jobs:check")}"' in text
    assert "resnet-running" in text and "37%" in text
    assert "bert-waiting" in text and "Priority" in text
    assert "old-done" not in text
    assert "vit sweep" in text
    assert f'href="{reverse("jobs:compose")}?from={composition.pk}"' in text  # duplicate
    assert reverse("jobs:composition_update", args=[composition.pk]) in text  # submit again
    assert re.search(r'name="submission_key" value="[0-9a-f]{32}"', text)  # once, however clicked
    assert "Your clusters' guidance" in text
    assert f'href="{reverse("guidance:cluster", args=["narval"])}"' in text
    assert 'href="/guidance/beluga/"' not in text  # not a cluster they have a login on
    assert "GPU usage" not in text.split("</nav>", 1)[1]  # nor an administrator's links


def test_the_running_jobs_update_live_and_stop_when_none_is_left(user_client, narval_login):
    job = _job(narval_login, "resnet", JobState.RUNNING)
    live = user_client.get("/", headers={"HX-Request": "true"})
    assert live.status_code == 200
    assert live.text.lstrip().startswith('<div id="active-jobs" hx-get="/"')
    job.state = JobState.COMPLETED
    job.save()
    last = user_client.get("/", headers={"HX-Request": "true"})
    assert last.status_code == 286  # htmx swaps it in and stops asking
    assert "Nothing running or waiting" in last.text


def test_someone_elses_jobs_are_not_shown(client, django_user_model, narval_login):
    _job(narval_login, "alices-secret-run", JobState.RUNNING)
    client.force_login(django_user_model.objects.create_user("mallory"))
    text = client.get("/").text
    assert "alices-secret-run" not in text
    assert "add your login on a cluster" in text


def test_an_administrator_finds_the_usage_and_the_guidance_editing(client, staff, seeded):
    client.force_login(staff)
    body = client.get("/").text.split("</nav>", 1)[1]
    assert f'href="{reverse("jobs:usage")}"' in body
    assert f'href="{reverse("admin:index")}"' in body
