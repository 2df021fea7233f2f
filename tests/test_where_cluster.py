""" "Where should this run?" on real Slurm: the dev cluster registered twice (the second a copy
of the first under another name, reached through the same sshd) and a third time behind a port
that takes the connection and never answers, as a cluster whose sshd has hung. Both real ones
are listed with Slurm's own estimates; the silent one is "unknown", within the budget, and
never holds the page."""

import io
import socket
import threading
import time

import pytest
from django.core.management import call_command

from guidance.models import Cluster, JobEnvironment, Policy
from jobs.models import ClusterAccount
from portal.models import ApiToken
from tests.test_validation import LOCAL

pytestmark = pytest.mark.django_db(transaction=True)
BUDGET = 8


def _copy(cluster: Cluster, slug: str, **changes) -> Cluster:
    """The cluster with its GPU types, node types, storage, policy and job environment, under
    another slug: what registering the same Slurm cluster a second time would publish."""
    source = Cluster.objects.get(pk=cluster.pk)
    gpu_types = list(source.gpu_types.all())
    partitions = list(source.partitions.all())
    related = [
        *source.storage_tiers.all(),
        *Policy.objects.filter(cluster=source),
        *JobEnvironment.objects.filter(cluster=source),
    ]
    copy = source
    copy.pk, copy.id, copy.slug, copy.name = None, None, slug, f"{source.name} ({slug})"
    for name, value in changes.items():
        setattr(copy, name, value)
    copy.save()
    new_type = {}
    for gpu_type in gpu_types:
        old = gpu_type.pk
        gpu_type.pk = gpu_type.id = None
        gpu_type.cluster = copy
        gpu_type.save()
        new_type[old] = gpu_type
    for partition in partitions:
        partition.pk = partition.id = None
        partition.cluster, partition.gpu_type = copy, new_type[partition.gpu_type_id]
        partition.save()
    for row in related:
        row.pk = row.id = None
        row.cluster = copy
        row.save()
    return copy


def _login_on(cluster: Cluster, account: ClusterAccount) -> ClusterAccount:
    account.pk = account.id = None
    account.cluster = cluster
    account.save()
    return account


@pytest.fixture
def silent_port():
    """Takes connections and says nothing: an sshd that has stopped answering."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    held = []

    def take():
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=take, daemon=True).start()
    yield server.getsockname()[1]
    server.close()
    for connection in held:
        connection.close()


def test_both_registrations_are_ranked_with_slurms_estimates_and_a_silent_one_is_unknown(
    client, user, devcluster, seeded, silent_port, settings
):
    settings.SOONER_BUDGET_SECONDS = BUDGET
    call_command("register_devcluster", user.username, stdout=io.StringIO())
    local = Cluster.objects.get(slug="local")
    account = ClusterAccount.objects.get(owner=user, cluster=local)
    _login_on(_copy(local, "local-2"), ClusterAccount.objects.get(pk=account.pk))
    _login_on(
        _copy(local, "local-down", login_port=silent_port),
        ClusterAccount.objects.get(pk=account.pk),
    )
    headers = {"Authorization": f"Bearer {ApiToken.issue(user, 'cli')[1]}"}
    job = {k: v for k, v in LOCAL.items() if v != "" and k not in ("modules",)}
    job |= {"hours": 0.2, "dataset_gb": 1, "command": "sleep 5"}

    began = time.monotonic()
    response = client.post("/api/v1/where", job, content_type="application/json", headers=headers)
    took = time.monotonic() - began
    assert response.status_code == 200, response.content
    assert took < BUDGET + 5  # the silent cluster is not waited for
    ranking = {p["cluster"]: p for p in response.json()["ranking"]}
    assert set(ranking) == {"local", "local-2", "local-down"}
    for slug in ("local", "local-2"):
        assert ranking[slug]["fits"] and ranking[slug]["start"], ranking[slug]
    assert ranking["local-down"]["start"] is None
    assert f"within {BUDGET} s" in ranking["local-down"]["start_problem"]
    assert [p["cluster"] for p in response.json()["ranking"]][-1] == "local-down"

    client.force_login(user)  # the page too: the fragment lists all three, the silent one unknown
    page = client.post("/jobs/new/where/", LOCAL | {"hours": "0.2"}, headers={"HX-Request": "true"})
    text = page.content.decode()
    assert 'data-cluster="local-2"' in text and "unknown" in text
