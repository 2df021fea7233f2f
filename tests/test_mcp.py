"""The MCP endpoint, driven by the MCP SDK's own client against the running test server: tools
and resources listed, the REST API's scopes, validation and words, plans that wait for the
user's word, and nobody else's jobs or plans. The dev cluster's part: tests/test_mcp_cluster.py."""

import asyncio
import io
import json
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from django.core.management import call_command
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Implementation

from jobs.models import Job, Plan, PlanState, TokenAction, Via
from portal.models import ApiToken, Scope
from tests.test_job_pages import _account

GOOD = """#!/bin/bash
#SBATCH --account=def-someuser
#SBATCH --time=03:00:00
#SBATCH --gpus-per-node=a100:2
#SBATCH --cpus-per-task=8
#SBATCH --mem=64G
python train.py
"""


@asynccontextmanager
async def connected(live_server, secret: str | None, **options: Any):
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        transport = streamable_http_client(f"{live_server.url}/mcp", http_client=http)
        info = Implementation(name="test-agent", version="1.0")
        async with Client(transport, client_info=info, **options) as client:
            yield client


def run(live_server, secret: str | None, calls, **options: Any) -> Any:
    """The calls, made by one client with this token: `calls(client)` is a coroutine."""

    async def session() -> Any:
        async with connected(live_server, secret, **options) as client:
            return await calls(client)

    return asyncio.run(session())


def text(result) -> str:
    return "\n".join(part.text for part in result.content)


def answer(result) -> Any:
    assert not result.is_error, text(result)
    return json.loads(text(result))


@pytest.fixture
def seeded_db(transactional_db):
    # live_server answers from another thread: the data must be committed (transactional_db).
    call_command("seed_guidance", stdout=io.StringIO())
    call_command("seed_templates", stdout=io.StringIO())


@pytest.fixture
def alice(seeded_db, django_user_model):
    return django_user_model.objects.create_user("alice", password="alice-password")


@pytest.fixture
def narval_login(alice):
    from guidance.models import Cluster

    return _account(alice, Cluster.objects.get(slug="narval"))


def secret_of(user, scope: Scope) -> str:
    return ApiToken.issue(user, f"agent-{scope}", scope)[1]


def test_it_lists_tools_and_resources(live_server, alice):
    async def calls(client):
        tools = await client.list_tools()
        templates = await client.list_resource_templates()
        return [t.name for t in tools.tools], [t.uri_template for t in templates.resource_templates]

    tools, templates = run(live_server, secret_of(alice, Scope.READ), calls)
    assert set(tools) >= {
        "clusters", "recommend", "plan_composition", "plan_script", "check_script",
        "check_code", "where_to_run", "dry_run", "submit", "jobs", "job", "cancel",
    }  # fmt: skip
    assert set(templates) == {"guidance://documents/{slug}", "cluster://{slug}"}


def test_it_refuses_a_missing_or_revoked_token(live_server, alice):
    token, secret = ApiToken.issue(alice, "gone", Scope.SUBMIT)
    token.revoke()
    for sent in (None, secret, "gp_not-a-token"):
        headers = {"Authorization": f"Bearer {sent}"} if sent else {}
        response = httpx2.post(f"{live_server.url}/mcp", headers=headers, json={})
        assert response.status_code == 401
        assert "Missing, unknown or revoked API token" in response.json()["detail"]


def test_it_reads_clusters_and_their_facts_with_sources(live_server, alice):
    async def calls(client):
        clusters = await client.call_tool("clusters", {})
        facts = await client.read_resource("cluster://narval")
        return clusters, facts

    clusters, facts = run(live_server, secret_of(alice, Scope.READ), calls)
    narval = next(c for c in answer(clusters)["clusters"] if c["slug"] == "narval")
    assert narval["page"].endswith("/guidance/narval/")
    read = json.loads(facts.contents[0].text)
    assert read["partitions"] and read["storage"]
    assert any(p["source"] and p["source"]["label"] for p in read["partitions"])


def test_a_read_only_token_may_not_compose_or_submit(live_server, alice, narval_login):
    plan_id = "00000000-0000-0000-0000-000000000001"

    async def calls(client):
        return [
            await client.call_tool("check_script", {"cluster": "narval", "script": GOOD}),
            await client.call_tool("submit", {"plan_id": plan_id}),
            await client.call_tool("cancel", {"job_id": 1}),
        ]

    for result in run(live_server, secret_of(alice, Scope.READ), calls):
        assert result.is_error
        assert "The token “agent-read” is read-only" in text(result)
    assert not Plan.objects.exists() and not Job.objects.exists()
    # Its owner sees what a program tried with the token, on "What your tokens did".
    tried = TokenAction.objects.filter(owner=alice, via=Via.MCP).order_by("pk")
    assert [action.what for action in tried] == [
        "Refused the tool check_script: it needs a compose token",
        "Refused the tool submit: it needs a compose token",
        "Refused the tool cancel: it needs a submit token",
    ]


def test_a_compose_token_checks_and_plans_and_its_plan_waits(live_server, alice, narval_login):
    async def calls(client):
        checked = await client.call_tool("check_script", {"cluster": "narval", "script": GOOD})
        planned = answer(
            await client.call_tool(
                "plan_script", {"cluster": "narval", "name": "resnet", "script": GOOD}
            )
        )
        asked = await client.call_tool("submit", {"plan_id": planned["id"]})
        dry = await client.call_tool("dry_run", {"plan_id": planned["id"]})
        return checked, planned, asked, dry

    checked, planned, asked, dry = run(
        live_server, secret_of(alice, Scope.COMPOSE), calls, elicitation_callback=_never_asked
    )
    assert answer(checked)["cluster"] == "narval"
    assert planned["gpu_hours"] == 6 and planned["confirm_url"].endswith(
        f"/jobs/plans/{planned['id']}/"
    )
    said = answer(asked)
    assert said["state"] == PlanState.WAITING and "waits for the user's word" in said["said"]
    assert answer(dry)["start_note"]  # Narval cannot be reached from here: said why
    plan = Plan.objects.get()
    assert plan.via == Via.MCP and plan.client == "test-agent 1.0" and plan.job is None
    assert not Job.objects.exists()  # asking is not submitting, even when the client could ask
    assert TokenAction.objects.filter(via=Via.MCP, plan=plan).count() == 2


async def _never_asked(context, params):
    raise AssertionError("a compose-only token's plan is never put to the user in the client")


HOSTILE = {
    "shell": "narval; rm -rf ~ $(reboot) `id` | cat",
    "long": "x" * 100_000,
    "nul": "narval\x00",
}


SCRIPT = {"cluster": "narval", "name": "a", "script": GOOD}
CHECK = {"cluster": "narval", "script": GOOD}
COMPOSE = {
    "cluster": "narval",
    "workload": "training",
    "dataset_gb": 1,
    "hours": 1,
    "command": "python train.py",
    "job_name": "resnet",
}
BAD = [
    ("plan_script", SCRIPT | {"name": HOSTILE["shell"]}, "name", "invalid_name"),
    ("plan_script", SCRIPT | {"name": HOSTILE["long"]}, "name", "string_too_long"),
    ("plan_script", SCRIPT | {"cluster": HOSTILE["nul"]}, "cluster", "null_characters"),
    ("check_script", CHECK | {"account": HOSTILE["shell"]}, "account", "invalid_account"),
    ("check_script", CHECK | {"cluster": HOSTILE["long"]}, "cluster", "string_too_long"),
    ("check_script", CHECK | {"script": "#!/bin/bash\x00\n"}, "script", "null_characters"),
    ("check_script", CHECK | {"extra": 1}, "extra", "extra_forbidden"),
    ("plan_composition", COMPOSE | {"job_name": HOSTILE["shell"]}, "job_name", None),
    ("plan_composition", COMPOSE | {"command": HOSTILE["nul"]}, "command", "null_characters"),
]


@pytest.mark.parametrize(("tool", "arguments", "field", "code"), BAD)
def test_hostile_arguments_get_the_apis_words(
    live_server, alice, narval_login, client, tool, arguments, field, code
):
    async def calls(mcp):
        return await mcp.call_tool(tool, arguments)

    secret = secret_of(alice, Scope.SUBMIT)
    result = run(live_server, secret, calls)
    assert result.is_error
    said = text(result)
    # The REST API answers the same body with the same field and words (422).
    rest_path = {"plan_script": "/api/v1/plans", "check_script": "/api/v1/check"}.get(
        tool, "/api/v1/plans/compose"
    )
    rest = client.post(
        rest_path, arguments, content_type="application/json",
        headers={"Authorization": f"Bearer {secret}"},
    )  # fmt: skip
    assert rest.status_code == 422
    detail = next(e for e in rest.json()["detail"] if e["field"] == field)
    assert f"{field}: {detail['message']}" in said
    if code:
        assert detail["code"] == code and f"({code})" in said
    assert not Plan.objects.exists() and not Job.objects.exists()


def test_another_users_plans_and_jobs_are_not_there(
    live_server, alice, narval_login, django_user_model
):
    from jobs.plans.making import plan_script

    plan = plan_script(alice, narval_login.cluster, "mine", GOOD)
    bob = django_user_model.objects.create_user("bob", password="bob-password")
    job = Job.objects.create(owner=alice, account=narval_login, name="mine", script=GOOD)

    async def calls(client):
        return [
            await client.call_tool("submit", {"plan_id": str(plan.pk)}),
            await client.call_tool("dry_run", {"plan_id": str(plan.pk)}),
            await client.call_tool("job", {"job_id": job.pk}),
            await client.call_tool("cancel", {"job_id": job.pk}),
            await client.call_tool("jobs", {}),
        ]

    *refused, listed = run(live_server, secret_of(bob, Scope.SUBMIT), calls)
    for result in refused:
        assert result.is_error
        assert f"You have no plan {plan.pk}." in text(
            result
        ) or f"You have no job {job.pk}." in text(result)
    assert answer(listed) == {"jobs": []}
    plan.refresh_from_db()
    assert plan.state == PlanState.CHECKED


def test_a_blocked_or_expired_plan_is_refused_in_words(live_server, alice, narval_login, settings):
    from datetime import timedelta

    from django.utils import timezone

    too_long = GOOD.replace("--time=03:00:00", "--time=10-00:00:00")  # over Narval's 7 days

    async def calls(client):
        blocked = answer(
            await client.call_tool(
                "plan_script", {"cluster": "narval", "name": "long", "script": too_long}
            )
        )
        fine = answer(await client.call_tool("plan_script", SCRIPT))
        await asyncio.to_thread(
            lambda: Plan.objects.filter(pk=fine["id"]).update(
                created=timezone.now() - timedelta(minutes=settings.PLAN_MINUTES, seconds=1)
            )
        )
        return blocked, [
            await client.call_tool("submit", {"plan_id": blocked["id"]}),
            await client.call_tool("submit", {"plan_id": fine["id"]}),
        ]

    blocked, (refused_blocked, refused_old) = run(
        live_server, secret_of(alice, Scope.SUBMIT), calls
    )
    assert blocked["blocked"] and any(f["severity"] == "fails" for f in blocked["findings"])
    assert refused_blocked.is_error and "would make this job fail" in text(refused_blocked)
    assert refused_old.is_error and "older than" in text(refused_old)
    assert not Job.objects.exists()
    assert not Plan.objects.filter(state=PlanState.WAITING).exists()


def test_the_api_and_mcp_share_one_rate_and_mark_the_token_used(
    live_server, alice, client, settings
):
    settings.API_RATE_LIMIT = "3/min"
    token, secret = ApiToken.issue(alice, "agent", Scope.READ)
    headers = {"Authorization": f"Bearer {secret}"}
    assert client.get("/api/v1/clusters", headers=headers).status_code == 200
    assert client.get("/api/v1/clusters", headers=headers).status_code == 200

    async def calls(mcp):
        return await mcp.call_tool("clusters", {})

    with pytest.raises(Exception):  # noqa: B017 (the SDK's error for an HTTP 429 varies)
        run(live_server, secret, calls)  # the third request of the minute, and more
    response = httpx2.post(f"{live_server.url}/mcp", headers=headers, json={})
    assert response.status_code == 429 and "over its rate of 3/min" in response.json()["detail"]
    assert response.headers["Retry-After"]
    assert client.get("/api/v1/clusters", headers=headers).status_code == 429
    token.refresh_from_db()
    assert token.last_used


def test_every_tool_below_its_scope_is_refused_in_words(live_server, alice):
    from portal.mcp_tools import _NEEDS

    # As tests/test_token_scopes.py holds the REST operations: reading is read, what changes
    # what runs on a cluster is submit, the rest compose (asking to submit is not submitting).
    assert {name for name, scope in _NEEDS.items() if scope == Scope.SUBMIT} == {"cancel"}
    assert {name for name, scope in _NEEDS.items() if scope == Scope.READ} == {
        "clusters",
        "jobs",
        "job",
    }
    below = {Scope.COMPOSE: Scope.READ, Scope.SUBMIT: Scope.COMPOSE}
    for needed, scope in below.items():

        async def calls(client, needed=needed):
            names = [name for name, scope in _NEEDS.items() if scope == needed]
            return {name: await client.call_tool(name, {}) for name in names}

        for name, result in run(live_server, secret_of(alice, scope), calls).items():
            assert result.is_error, name
            assert f"The token “agent-{scope}”" in text(result), name
