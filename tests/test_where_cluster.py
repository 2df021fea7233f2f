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

from guidance.models import Cluster
from jobs.models import ClusterAccount
from portal.models import ApiToken
from tests.registrations import login_on, register_again
from tests.test_validation import LOCAL

pytestmark = pytest.mark.django_db(transaction=True)
BUDGET = 8


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
    login_on(register_again(local, "local-2"), account)
    login_on(register_again(local, "local-down", login_port=silent_port), account)
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
