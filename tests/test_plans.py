"""Plans: what a program planned reaches Slurm only by the user's word, once. The seeded Narval
cannot be reached from here, so its start estimate is unknown (said why); the cluster test
tests/test_plans_cluster.py gets Slurm's own estimate and a real job."""

from datetime import timedelta

import pytest
from django.utils import timezone

from guidance.engine.script_check.check import MAX_CHARS
from guidance.models import Cluster
from jobs.models import Job, Plan, PlanState, TokenAction, Via
from jobs.plans import deciding
from jobs.plans.making import PlanRefused, plan_script
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
# Narval's a100 nodes take 7 days at most: sbatch would refuse it.
TOO_LONG = GOOD.replace("--time=03:00:00", "--time=10-00:00:00")


@pytest.fixture(autouse=True)
def short_budget(settings):
    settings.SOONER_BUDGET_SECONDS = 2


@pytest.fixture
def narval(seeded) -> Cluster:
    return Cluster.objects.get(slug="narval")


@pytest.fixture
def login(user, narval):
    return _account(user, narval)


@pytest.fixture
def token(user):
    return ApiToken.issue(user, "agent", Scope.SUBMIT)[0]


def _plan(user, narval, token, script=GOOD, name="resnet") -> Plan:
    return plan_script(user, narval, name, script, via=Via.MCP, token=token, client="an agent 1.0")


def test_a_plan_is_checked_costed_and_estimated(user, narval, login, token):
    plan = _plan(user, narval, token)
    assert plan.state == PlanState.CHECKED and not plan.blocked
    assert plan.gpu_hours == 6  # 2 GPUs for 3 h
    assert "6 GPU-hours" in plan.gpu_hours_words
    assert plan.start is None and plan.start_note  # unreachable from here: said why
    assert "--output=" in plan.script  # where the portal reads its output, as POST /jobs adds
    assert not Job.objects.exists()
    assert TokenAction.objects.get().what == "Planned resnet on Narval"


def test_a_plan_that_would_fail_is_blocked_and_never_submitted(user, narval, login, token):
    plan = _plan(user, narval, token, TOO_LONG)
    assert plan.blocked
    assert any(f["severity"] == "fails" for f in plan.findings)
    for decide in (deciding.ask_to_submit, deciding.confirm):
        with pytest.raises(PlanRefused) as refused:
            decide(plan.pk, user)
        assert refused.value.code == "blocked"
    assert not Job.objects.exists()


def test_an_old_plan_must_be_made_again(user, narval, login, token, settings):
    plan = _plan(user, narval, token)
    Plan.objects.filter(pk=plan.pk).update(
        created=timezone.now() - timedelta(minutes=settings.PLAN_MINUTES, seconds=1)
    )
    with pytest.raises(PlanRefused, match="older than 15 minutes") as refused:
        deciding.ask_to_submit(plan.pk, user)
    assert refused.value.code == "expired"
    with pytest.raises(PlanRefused):
        deciding.confirm(plan.pk, user)


def test_asking_submits_nothing_and_confirming_twice_makes_one_job(user, narval, login, token):
    plan = _plan(user, narval, token)
    asked = deciding.ask_to_submit(plan.pk, user)
    assert asked.state == PlanState.WAITING and not Job.objects.exists()
    job = deciding.confirm(plan.pk, user)
    assert deciding.confirm(plan.pk, user) == job
    assert Job.objects.count() == 1
    assert (job.via, job.token, job.client) == (Via.MCP, token, "an agent 1.0")
    plan.refresh_from_db()
    assert (plan.state, plan.job, plan.decided_via) == (PlanState.SUBMITTED, job, Via.PAGE)


def test_a_declined_plan_cannot_be_confirmed(user, narval, login, token):
    plan = _plan(user, narval, token)
    deciding.decline(plan.pk, user)
    with pytest.raises(PlanRefused) as refused:
        deciding.confirm(plan.pk, user)
    assert refused.value.code == "declined" and not Job.objects.exists()


def test_another_users_plan_is_not_there(user, narval, login, token, django_user_model):
    plan = _plan(user, narval, token)
    mallory = django_user_model.objects.create_user("mallory", password="x")
    for decide in (deciding.ask_to_submit, deciding.confirm, deciding.decline, deciding.find):
        with pytest.raises(PlanRefused) as refused:
            decide(plan.pk, mallory)
        assert refused.value.code == "unknown_plan"


@pytest.mark.parametrize(
    ("name", "script", "code"),
    [
        ("x; rm -rf ~", GOOD, "invalid_name"),
        ("$(reboot)", GOOD, "invalid_name"),
        ("resnet", "python train.py\n", "not_a_batch_script"),
    ],
)
def test_what_could_never_be_submitted_is_not_planned(
    user, narval, login, token, name, script, code
):
    with pytest.raises(PlanRefused) as refused:
        _plan(user, narval, token, script, name)
    assert refused.value.code == code and not Plan.objects.exists()


def test_without_a_login_there_is_no_plan(user, narval, token):
    with pytest.raises(PlanRefused) as refused:
        _plan(user, narval, token)
    assert refused.value.code == "no_login"


# --- The pages -----------------------------------------------------------------------------


def test_the_user_sees_the_waiting_plan_confirms_it_and_sees_its_origin(
    user_client, user, narval, login, token
):
    plan = deciding.ask_to_submit(_plan(user, narval, token).pk, user)
    # Every page's header asks for the notifications' count, which brings the waiting plans.
    assert 'id="plans-waiting" hidden' in user_client.get("/").content.decode()
    # Without JavaScript the header fills nothing: the tokens page links there too.
    assert 'href="/jobs/plans/"' in user_client.get("/settings/tokens/").content.decode()
    header = user_client.get("/jobs/notifications/count/").content.decode()
    assert "Plans to confirm" in header and 'aria-label="1 waiting"' in header
    listed = user_client.get("/jobs/plans/").content.decode()
    assert f'data-plan="{plan.pk}"' in listed and "an MCP client (an agent 1.0)" in listed
    page = user_client.get(plan.get_absolute_url()).content.decode()
    assert "Submit it" in page and "6 GPU-hours" in page and "#SBATCH --time=03:00:00" in page
    response = user_client.post(f"/jobs/plans/{plan.pk}/confirm/", follow=True)
    job = Job.objects.get()
    assert response.redirect_chain[-1][0] == job.get_absolute_url()
    shown = response.content.decode()
    assert "Submitted through an MCP client (an agent 1.0) with your API token “agent”" in shown
    assert "which you confirmed on the portal&#x27;s pages" in shown
    again = user_client.post(f"/jobs/plans/{plan.pk}/confirm/", follow=True)
    assert again.redirect_chain[-1][0] == job.get_absolute_url() and Job.objects.count() == 1
    assert "Plans to confirm" not in user_client.get("/jobs/notifications/count/").content.decode()


def test_a_blocked_plan_offers_no_submit_button(user_client, user, narval, login, token):
    plan = _plan(user, narval, token, TOO_LONG)
    page = user_client.get(plan.get_absolute_url()).content.decode()
    assert "cannot be submitted" in page and "Submit it" not in page
    assert 'class="source">Source:' in page  # each finding cites the guidance it follows
    response = user_client.post(f"/jobs/plans/{plan.pk}/confirm/", follow=True)
    assert "would make this job fail" in response.content.decode()
    assert not Job.objects.exists()


def test_another_users_plan_pages_are_not_found(
    client, user, narval, login, token, django_user_model
):
    plan = _plan(user, narval, token)
    mallory = django_user_model.objects.create_user("mallory", password="x")
    client.force_login(mallory)
    assert client.get(plan.get_absolute_url()).status_code == 404
    assert client.post(f"/jobs/plans/{plan.pk}/confirm/").status_code == 404
    assert client.post(f"/jobs/plans/{plan.pk}/decline/").status_code == 404
    assert not Job.objects.exists()


def test_the_tokens_actions_page_lists_what_the_program_did(
    user_client, user, narval, login, token
):
    plan = _plan(user, narval, token)
    deciding.ask_to_submit(plan.pk, user)
    page = user_client.get("/settings/tokens/actions/").content.decode()
    assert "Planned resnet on Narval" in page and "Asked to submit resnet" in page
    assert "an agent 1.0" in page
    assert "What your tokens did" in user_client.get("/settings/tokens/").content.decode()


# --- The API -------------------------------------------------------------------------------


def _api(client, method, path, secret, body=None):
    headers = {"Authorization": f"Bearer {secret}", "User-Agent": "agent-cli/2"}
    if method == "get":
        return client.get(path, headers=headers)
    return client.post(path, body or {}, content_type="application/json", headers=headers)


def test_the_api_plans_and_asks_but_only_the_user_submits(client, user, narval, login):
    compose = ApiToken.issue(user, "compose", Scope.COMPOSE)[1]
    read = ApiToken.issue(user, "read", Scope.READ)[1]
    body = {"cluster": "narval", "name": "resnet", "script": GOOD}
    made = _api(client, "post", "/api/v1/plans", compose, body)
    assert made.status_code == 201, made.content
    plan = made.json()
    assert plan["gpu_hours"] == 6 and plan["state"] == "checked" and not plan["blocked"]
    assert plan["confirm_url"].endswith(f"/jobs/plans/{plan['id']}/")
    assert _api(client, "post", "/api/v1/plans", read, body).status_code == 403
    url = f"/api/v1/plans/{plan['id']}/submit"
    assert _api(client, "post", url, read).status_code == 403
    asked = _api(client, "post", url, compose)  # asking is not submitting
    assert asked.status_code == 202 and asked.json()["state"] == "waiting"
    assert not Job.objects.exists()
    seen = _api(client, "get", f"/api/v1/plans/{plan['id']}", read)
    assert seen.status_code == 200 and seen.json()["job_id"] is None
    assert Plan.objects.get().client == "agent-cli/2"


def test_the_api_refuses_a_blocked_plan_and_hides_others(
    client, user, narval, login, django_user_model
):
    submit = ApiToken.issue(user, "submit", Scope.SUBMIT)[1]
    body = {"cluster": "narval", "name": "resnet", "script": TOO_LONG}
    plan = _api(client, "post", "/api/v1/plans", submit, body).json()
    assert all(f["source"]["document"] for f in plan["findings"] if f["severity"] == "fails")
    refused = _api(client, "post", f"/api/v1/plans/{plan['id']}/submit", submit)
    assert refused.status_code == 409 and "would make this job fail" in refused.json()["detail"]
    mallory = django_user_model.objects.create_user("mallory", password="x")
    theirs = ApiToken.issue(mallory, "theirs", Scope.SUBMIT)[1]
    assert _api(client, "get", f"/api/v1/plans/{plan['id']}", theirs).status_code == 404
    assert _api(client, "post", f"/api/v1/plans/{plan['id']}/submit", theirs).status_code == 404


@pytest.mark.parametrize(
    ("changes", "field", "code"),
    [
        ({"name": "a;b"}, "name", "invalid_name"),
        ({"script": "#!/bin/bash\x00\n"}, "script", "null_characters"),
        ({"script": "#!/bin/bash\n" + "x" * MAX_CHARS}, "script", "string_too_long"),
        ({"cluster": "nowhere"}, "cluster", "unknown_cluster"),
    ],
)
def test_bad_plan_input_gets_the_apis_errors(client, user, narval, login, changes, field, code):
    compose = ApiToken.issue(user, "compose", Scope.COMPOSE)[1]
    body = {"cluster": "narval", "name": "resnet", "script": GOOD} | changes
    response = _api(client, "post", "/api/v1/plans", compose, body)
    assert response.status_code == 422, response.content
    assert (field, code) in {(e["field"], e["code"]) for e in response.json()["detail"]}
    assert not Plan.objects.exists()


def test_plans_asked_to_submit_come_first(user_client, user, narval, login, token):
    asked = deciding.ask_to_submit(_plan(user, narval, token, name="asked").pk, user)
    planned = _plan(user, narval, token, name="planned")  # newer, but only planned
    listed = user_client.get("/jobs/plans/").content.decode()
    assert listed.index(f'data-plan="{asked.pk}"') < listed.index(f'data-plan="{planned.pk}"')
