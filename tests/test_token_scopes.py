"""Scoped API tokens: a token is read-only, may compose and check, or may also submit and
cancel. Checked over every operation the API publishes, so that a new endpoint cannot slip past
the rule: reading is a GET, and nothing that puts a job in Slurm's queue or takes one out is
open to a token that may not submit."""

import io
import re

import pytest
from django.core.management import call_command
from django.urls import reverse

from jobs.models import Job
from portal.api import api
from portal.models import ApiToken, Scope

# The operations that change what runs on a cluster: the user's word for those is "submit".
CHANGES_JOBS = {"submit_script", "submit_composition", "job_cancel", "job_rerun_failed"}


def _operations() -> list[tuple[str, str, str]]:
    schema = api.get_openapi_schema()
    return [
        (method.upper(), path, operation["operationId"])
        for path, methods in schema["paths"].items()
        for method, operation in methods.items()
    ]


def _part(method: str, operation_id: str) -> Scope:
    if method == "GET":
        return Scope.READ
    return Scope.SUBMIT if operation_id in CHANGES_JOBS else Scope.COMPOSE


def _call(client, method: str, path: str, secret: str):
    url = re.sub(r"\{(\w+)\}", lambda m: "999999" if m[1] == "job_id" else "narval", path)
    headers = {"Authorization": f"Bearer {secret}"}
    if method == "GET":
        return client.get(url, headers=headers)
    return client.post(url, {}, content_type="application/json", headers=headers)


def test_the_api_publishes_the_operations_this_test_knows():
    ids = {operation_id for _, _, operation_id in _operations()}
    assert ids >= CHANGES_JOBS and len(ids) >= 12


@pytest.mark.parametrize("scope", list(Scope))
def test_each_operation_is_open_exactly_to_the_scopes_that_include_its_part(
    client, seeded, user, scope
):
    _, secret = ApiToken.issue(user, "agent", scope)
    for method, path, operation_id in _operations():
        response = _call(client, method, path, secret)
        allowed = scope.allows(_part(method, operation_id))
        said = f"{method} {path} with a {scope.value} token: {response.status_code}"
        if allowed:
            assert response.status_code not in (401, 403), said
        else:
            assert response.status_code == 403, said
            detail = response.json()["detail"]
            assert "“agent”" in detail and "API tokens page" in detail, detail


def test_a_compose_token_cannot_submit_even_a_good_job(client, seeded, user):
    _, secret = ApiToken.issue(user, "agent", Scope.COMPOSE)
    script = "#!/bin/bash\n#SBATCH --time=00:01:00\ntrue\n"
    body = {"cluster": "narval", "name": "x", "script": script, "accept_findings": True}
    response = client.post(
        "/api/v1/jobs",
        body,
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert response.status_code == 403
    assert "may compose and check, not submit" in response.json()["detail"]
    assert not Job.objects.exists()
    # The refusal is in the owner's record of what the token did, and on its page.
    client.force_login(user)
    page = client.get("/settings/tokens/actions/").content.decode()
    assert "Refused POST /api/v1/jobs: it needs a submit token" in page


def test_the_openapi_schema_names_the_refusal(seeded):
    operation = api.get_openapi_schema()["paths"]["/api/v1/jobs"]["post"]
    assert operation["responses"][403]["description"] == "Forbidden"


def test_the_tokens_page_makes_a_token_of_the_chosen_scope_and_lists_it(user_client, user):
    page = user_client.get(reverse("tokens")).text
    assert 'value="compose" checked' in page.replace("\n", " ") or re.search(
        r'value="compose"[^>]*checked', page
    )
    user_client.post(reverse("tokens"), {"name": "agent", "scope": "read"})
    token = ApiToken.objects.get(user=user)
    assert token.scope == Scope.READ
    listed = user_client.get(reverse("tokens")).text
    assert '<td data-scope="read">Read only' in listed


def test_the_tokens_page_asks_for_a_scope_and_keeps_the_name(user_client, user):
    response = user_client.post(reverse("tokens"), {"name": "agent"})
    assert "Choose what the token may do." in response.text
    assert 'value="agent"' in response.text
    assert not ApiToken.objects.exists()
    response = user_client.post(reverse("tokens"), {"name": "agent", "scope": "everything"})
    assert "Select a valid choice" in response.text and not ApiToken.objects.exists()


def test_the_command_makes_a_token_of_the_scope_asked(user):
    out = io.StringIO()
    call_command("create_api_token", "alice", "--scope", "read", stdout=out)
    assert ApiToken.find(out.getvalue().strip()).scope == Scope.READ


def test_tokens_made_before_scopes_keep_what_they_could_do(user):
    token, _ = ApiToken.issue(user, "old")
    assert token.scope == Scope.SUBMIT
