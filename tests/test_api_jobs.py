"""The API's jobs (/api/v1/jobs): submitted once per key, listed, shown and refused as the pages
do, and nobody else's; at the end, the whole loop on the real dev cluster through the API alone
(submission task and polls run in-process, as in test_jobs_cluster.py)."""

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from guidance.models import Cluster
from jobs import tasks
from jobs.models import ClusterAccount, Job, JobOrigin, JobState, no_login
from portal.models import ApiToken
from tests.test_api_script import JOB as COMPOSED
from tests.test_job_pages import _account

SCRIPT = "#!/bin/bash\n#SBATCH --account=def-someuser\n#SBATCH --time=00:10:00\necho hi\n"


def _auth(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


@pytest.fixture
def narval(seeded) -> Cluster:
    return Cluster.objects.get(slug="narval")


@pytest.fixture
def account(user, narval):
    return _account(user, narval)


@pytest.fixture
def stranger(django_user_model) -> str:
    mallory = django_user_model.objects.create_user("mallory", password="x")
    return ApiToken.issue(mallory, "theirs")[1]


@pytest.fixture
def job(user, account) -> Job:
    return Job.objects.create(
        owner=user,
        account=account,
        name="resnet",
        script=SCRIPT,
        slurm_id="1234",
        state=JobState.PENDING,
        reason="Priority",
    )


def _submit(client, secret, headers=None, **changes):
    body = {"cluster": "narval", "name": "hello", "script": SCRIPT} | changes
    headers = _auth(secret) | (headers or {})
    return client.post("/api/v1/jobs", body, content_type="application/json", headers=headers)


def _errors(response) -> dict[str | None, tuple[str, str]]:
    assert response.status_code == 422, response.content
    return {e["field"]: (e["code"], e["message"]) for e in response.json()["detail"]}


# --- Submitting ----------------------------------------------------------------------------


def test_a_script_is_queued_as_a_job(client, secret, account, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as queued:
        response = _submit(client, secret, accept_findings=True)
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["name"], body["cluster"], body["state"]) == ("hello", "narval", "SUBMITTING")
    assert body["origin"] == "portal" and body["links"]["page"].endswith(f"/jobs/{body['id']}/")
    assert len(queued) == 1  # the submission task, once the job is saved
    job = Job.objects.get(pk=body["id"])
    # Its output goes where GET /jobs/{id}/output reads it.
    assert "#SBATCH --output=portal-jobs/hello/slurm-%j.out" in job.script
    assert "#SBATCH --error=portal-jobs/hello/slurm-%j.err" in job.script
    assert job.script.startswith("#!/bin/bash\n") and job.script.endswith("echo hi\n")


def test_a_script_that_names_its_output_keeps_it(client, secret, account):
    script = SCRIPT.replace("echo", "#SBATCH -o out.txt\n#SBATCH --error=err.txt\necho")
    body = _submit(client, secret, script=script, accept_findings=True).json()
    assert Job.objects.get(pk=body["id"]).script == script


@pytest.mark.parametrize("how", ["header", "field"])
def test_a_retried_submission_makes_one_job(
    client, secret, account, how, django_capture_on_commit_callbacks
):
    key = "6f1c0d1e-retry-me"
    sent = {"headers": {"Idempotency-Key": key}} if how == "header" else {"submission_key": key}
    with django_capture_on_commit_callbacks() as queued:
        first = _submit(client, secret, accept_findings=True, **sent)
        again = _submit(client, secret, accept_findings=True, **sent)
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]
    assert Job.objects.count() == 1 and len(queued) == 1
    # A new key is a new job.
    assert _submit(client, secret, accept_findings=True, submission_key="other").status_code == 201
    assert Job.objects.count() == 2


def test_the_key_is_each_users_own(client, secret, stranger, account, django_user_model):
    _submit(client, secret, accept_findings=True, submission_key="same")
    _account(django_user_model.objects.get(username="mallory"), account.cluster)
    theirs = _submit(client, stranger, accept_findings=True, submission_key="same")
    assert theirs.status_code == 201
    assert Job.objects.get(pk=theirs.json()["id"]).owner.username == "mallory"


def test_a_header_and_field_that_differ_are_refused(client, secret, account):
    response = _submit(client, secret, {"Idempotency-Key": "a"}, submission_key="b")
    assert _errors(response)["submission_key"][0] == "key_mismatch"
    assert not Job.objects.exists()


def test_the_checkers_findings_refuse_the_script_until_accepted(client, secret, account):
    script = "#!/bin/bash\n#SBATCH --time=30-00:00:00\necho hi\n"  # over every partition's limit
    errors = _submit(client, secret, script=script).json()["detail"]
    assert "over_max_duration" in {e["code"] for e in errors}, errors
    assert all(e["field"] == "script" for e in errors)
    assert not Job.objects.exists()
    assert _submit(client, secret, script=script, accept_findings=True).status_code == 201


def test_without_a_login_it_says_to_set_one_up(client, secret, narval):
    code, message = _errors(_submit(client, secret))["cluster"]
    assert code == "no_login" and message == no_login(narval, "first, in the portal")
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"cluster": "atlantis"}, "cluster", "No cluster 'atlantis'. Known clusters:"),
        ({"script": "  \n"}, "script", "The script is empty."),
        ({"script": "#!/bin/bash\x00\necho"}, "script", "Null characters are not allowed."),
        ({"name": "a\x00b"}, "name", "Null characters are not allowed."),
        ({"script": "#!/bin/bash\n" + "#" * 200_000}, "script", "at most 200000 characters"),
        ({"script": "echo hi\n"}, "script", "The first line must start with #!"),
        ({"name": "../escape"}, "name", "letters"),
        ({"cluster": "runai"}, "cluster", "not scheduled by Slurm"),
        ({"sbatch": "extra"}, "sbatch", "Extra inputs are not permitted"),
    ],
)
def test_bad_input_is_refused_with_words(client, secret, account, changes, field, words):
    if changes.get("cluster") == "runai" and not Cluster.objects.filter(slug="runai").exists():
        changes = {"cluster": Cluster.objects.exclude(scheduler="slurm").first().slug}
    _, message = _errors(_submit(client, secret, accept_findings=True, **changes))[field]
    assert words.lower() in message.lower()
    assert not Job.objects.exists()


def test_a_composition_is_composed_and_queued_once(client, secret, account, user):
    body = COMPOSED | {"submission_key": "compose-1"}
    post = lambda: client.post(  # noqa: E731
        "/api/v1/jobs/compose", body, content_type="application/json", headers=_auth(secret)
    )
    first, again = post(), post()
    assert (first.status_code, again.status_code) == (201, 200), first.content
    job = Job.objects.get()
    assert first.json()["id"] == again.json()["id"] == job.pk
    composition = user.compositions.get()  # one, as "Save and submit" keeps
    assert job.composition == composition and job.name == "resnet"
    assert job.script == composition.script and "#SBATCH --array=1-3%1" in job.script
    # The same script as POST /script writes for the same fields.
    script = client.post(
        "/api/v1/script", COMPOSED, content_type="application/json", headers=_auth(secret)
    )
    assert script.json()["script"] == job.script


def test_a_composition_with_a_fault_is_refused_by_field(client, secret, account):
    body = COMPOSED | {"job_name": "x; rm -rf ~"}
    response = client.post(
        "/api/v1/jobs/compose", body, content_type="application/json", headers=_auth(secret)
    )
    assert "job_name" in _errors(response)
    assert not Job.objects.exists()


# --- Following -----------------------------------------------------------------------------


def test_the_owner_sees_the_job_as_its_page_shows_it(client, secret, job):
    response = client.get(f"/api/v1/jobs/{job.pk}", headers=_auth(secret))
    body = response.json()
    assert (body["slurm_id"], body["state"], body["reason"]) == ("1234", "PENDING", "Priority")
    assert body["state_explanation"] == JobState.PENDING.explanation
    # The reason in the words of its page.
    assert body["reason_text"] == job.pending_reason.meaning and "priority" in body["reason_text"]
    assert body["what_to_do"] == job.pending_reason.action
    assert body["state_label"] == "Pending"
    assert body["events"] == [] and body["efficiency"] is None
    assert body["links"]["page"] == f"http://testserver/jobs/{job.pk}/"
    assert body["links"]["output"] == f"http://testserver/api/v1/jobs/{job.pk}/output"


def test_a_finished_job_has_the_efficiency_report_of_its_page(client, secret, job):
    Job.objects.filter(pk=job.pk).update(
        state=JobState.COMPLETED,
        elapsed_seconds=600,
        time_limit_seconds=3600,
        cpus=4,
        cpu_seconds=1200,
        max_rss_mb=1000,
        requested_memory_mb=8000,
    )
    report = client.get(f"/api/v1/jobs/{job.pk}", headers=_auth(secret)).json()["efficiency"]
    assert report["cpu_percent"] == 50.0  # 1200 CPU s of 4 CPUs x 600 s
    assert report["memory_percent"] == 12.5
    assert report["time_percent"] == pytest.approx(100 / 6)
    assert (report["elapsed"], report["time_limit"]) == ("0:10:00", "1:00:00")
    assert {s["field"] for s in report["suggestions"]} == {"memory", "hours"}


def test_the_list_filters_and_pages(client, secret, job, user):
    for n in range(3):
        Job.objects.create(
            owner=user, account=job.account, name=f"done{n}", script="x", state="COMPLETED"
        )

    def names(**query) -> list[str]:
        response = client.get("/api/v1/jobs", query, headers=_auth(secret))
        assert response.status_code == 200, response.content
        return [j["name"] for j in response.json()["items"]]

    assert names() == ["done2", "done1", "done0", "resnet"]
    assert names(state="active") == ["resnet"]
    assert names(state="PENDING") == ["resnet"]
    assert names(state="final") == ["done2", "done1", "done0"]
    assert names(cluster="cedar") == []
    assert names(page_size=2, page=2) == ["done0", "resnet"]
    body = client.get("/api/v1/jobs", headers=_auth(secret)).json()
    assert body["count"] == 4


@pytest.mark.parametrize(
    ("query", "field"),
    [({"state": "DONE"}, "state"), ({"stat": "RUNNING"}, "stat"), ({"page": 0}, "page")],
)
def test_a_bad_filter_is_refused(client, secret, job, query, field):
    response = client.get("/api/v1/jobs", query, headers=_auth(secret))
    assert field in _errors(response)


def test_another_users_token_sees_none_of_it(client, stranger, job):
    headers = _auth(stranger)
    for response in (
        client.get(f"/api/v1/jobs/{job.pk}", headers=headers),
        client.get(f"/api/v1/jobs/{job.pk}/output", headers=headers),
        client.post(f"/api/v1/jobs/{job.pk}/cancel", headers=headers),
    ):
        assert response.status_code == 404
        assert response.json() == {"detail": f"You have no job {job.pk}."}
    listed = client.get("/api/v1/jobs", headers=headers).json()
    assert listed == {"items": [], "count": 0}


def test_a_job_that_has_ended_is_not_cancelled(client, secret, job):
    Job.objects.filter(pk=job.pk).update(state=JobState.COMPLETED)
    response = client.post(f"/api/v1/jobs/{job.pk}/cancel", headers=_auth(secret))
    assert response.status_code == 409
    assert "nothing to cancel" in response.json()["detail"]


def test_output_before_slurm_has_the_job_is_empty(client, secret, job):
    Job.objects.filter(pk=job.pk).update(slurm_id="", state=JobState.SUBMITTING)
    response = client.get(f"/api/v1/jobs/{job.pk}/output?stream=err", headers=_auth(secret))
    assert response.json() == {"stream": "err", "text": "", "cap_bytes": 64 * 1024}
    response = client.get(f"/api/v1/jobs/{job.pk}/output?stream=both", headers=_auth(secret))
    assert _errors(response)["stream"][0] == "unknown_stream"


def test_every_job_endpoint_wants_a_token(client, job):
    for method, url in [
        ("get", "/api/v1/jobs"),
        ("post", "/api/v1/jobs"),
        ("post", "/api/v1/jobs/compose"),
        ("get", f"/api/v1/jobs/{job.pk}"),
        ("post", f"/api/v1/jobs/{job.pk}/cancel"),
        ("get", f"/api/v1/jobs/{job.pk}/output"),
    ]:
        assert getattr(client, method)(url).status_code == 401


def test_the_schema_lists_the_job_endpoints(client, db):
    paths = client.get("/api/v1/openapi.json").json()["paths"]
    assert set(paths["/api/v1/jobs"]) == {"get", "post"}
    assert "post" in paths["/api/v1/jobs/compose"]
    assert "get" in paths["/api/v1/jobs/{job_id}"]
    assert "post" in paths["/api/v1/jobs/{job_id}/cancel"]
    assert "get" in paths["/api/v1/jobs/{job_id}/output"]
    submit = paths["/api/v1/jobs"]["post"]["responses"]
    assert {"200", "201", "422"} <= set(submit)
    components = client.get("/api/v1/openapi.json").json()["components"]["schemas"]
    assert "submission_key" in components["ScriptJobIn"]["properties"]


# --- The whole loop, on the real dev cluster -------------------------------------------------


@pytest.fixture
def eager_submission(monkeypatch, django_capture_on_commit_callbacks):
    """The submission task runs in this process as soon as the job commits, as a worker would."""
    monkeypatch.setattr(tasks.submit_job, "delay", lambda job_id: tasks.submit_job.apply([job_id]))

    def submit(client, secret, **fields):
        with django_capture_on_commit_callbacks(execute=True):
            # The dev cluster bills no account: the checker's word about --account is accepted.
            return _submit(client, secret, cluster="local", accept_findings=True, **fields)

    return submit


def _follow(client, secret, job_id: int, until, timeout: float = 60) -> list[str]:
    """Polls as beat does, reading the job through the API alone, until `until(job)` holds."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = client.get(f"/api/v1/jobs/{job_id}", headers=_auth(secret)).json()
        if not seen or seen[-1] != body["state"]:
            seen.append(body["state"])
        if until(body):
            return seen
        tasks.poll_clusters.apply()
        time.sleep(0.5)
    raise AssertionError(f"the job went through {seen} in {timeout} s")


def test_a_job_is_submitted_followed_and_read_through_the_api(
    client, secret, local_login, eager_submission, stranger
):
    script = "#!/bin/bash\n#SBATCH --time=00:02:00\necho hello from $SLURM_JOB_ID; sleep 2\n"
    first = eager_submission(client, secret, name="api-hello", script=script, submission_key="k1")
    assert first.status_code == 201, first.content
    job_id = first.json()["id"]
    again = eager_submission(client, secret, name="api-hello", script=script, submission_key="k1")
    assert (again.status_code, again.json()["id"]) == (200, job_id)

    shown = client.get(f"/api/v1/jobs/{job_id}", headers=_auth(secret)).json()
    assert shown["state"] in JobState.active() and shown["slurm_id"]
    listed = client.get("/api/v1/jobs?state=active&cluster=local", headers=_auth(secret)).json()
    assert [j["id"] for j in listed["items"]] == [job_id]

    seen = _follow(client, secret, job_id, lambda job: job["state"] in JobState.final())
    assert seen[-1] == "COMPLETED", seen
    done = client.get(f"/api/v1/jobs/{job_id}", headers=_auth(secret)).json()
    assert done["exit_code"] == 0 and done["nodes"] and done["started"] and done["ended"]
    assert done["state_explanation"] == JobState.COMPLETED.explanation
    assert done["efficiency"]["elapsed"]  # the report, once it has ended
    # One Slurm job for the two POSTs.
    assert Job.objects.get(origin=JobOrigin.PORTAL).slurm_id == shown["slurm_id"]

    out = client.get(f"/api/v1/jobs/{job_id}/output", headers=_auth(secret)).json()
    assert f"hello from {shown['slurm_id']}" in out["text"]
    assert client.get(f"/api/v1/jobs/{job_id}/output", headers=_auth(stranger)).status_code == 404


def test_a_job_is_cancelled_through_the_api(client, secret, local_login, eager_submission):
    script = "#!/bin/bash\n#SBATCH --time=00:02:00\nsleep 60\n"
    job_id = eager_submission(client, secret, name="api-sleep", script=script).json()["id"]
    _follow(client, secret, job_id, lambda job: job["state"] == "RUNNING")
    response = client.post(f"/api/v1/jobs/{job_id}/cancel", headers=_auth(secret))
    assert response.status_code == 202, response.content
    seen = _follow(client, secret, job_id, lambda job: job["state"] in JobState.final())
    assert seen[-1] == "CANCELLED", seen
    again = client.post(f"/api/v1/jobs/{job_id}/cancel", headers=_auth(secret))
    assert again.status_code == 409


def test_a_cluster_that_cannot_be_reached_is_said_in_words(
    client, secret, local_login, eager_submission
):
    script = "#!/bin/bash\n#SBATCH --time=00:02:00\n#SBATCH --hold\ntrue\n"
    job_id = eager_submission(client, secret, name="api-held", script=script).json()["id"]
    cluster = local_login.cluster
    port, cluster.login_port = cluster.login_port, 9  # nothing listens there
    cluster.save(update_fields=["login_port"])
    try:
        for response in (
            client.get(f"/api/v1/jobs/{job_id}/output", headers=_auth(secret)),
            client.post(f"/api/v1/jobs/{job_id}/cancel", headers=_auth(secret)),
        ):
            assert response.status_code in (502, 503), response.content
            said = response.json()["detail"]
            assert "cluster" in said.lower() and "Traceback" not in said
            assert response.status_code == 502 or response["Retry-After"]
    finally:
        cluster.login_port = port
        cluster.save(update_fields=["login_port"])
    assert client.post(f"/api/v1/jobs/{job_id}/cancel", headers=_auth(secret)).status_code == 202


def test_following_a_waiting_job_through_the_api_polls_its_login_at_every_beat(
    client, secret, job, account
) -> None:
    later = timezone.now() + timedelta(seconds=60)
    ClusterAccount.objects.filter(pk=account.pk).update(quiet_polls=3, poll_after=later)
    assert client.get(f"/api/v1/jobs/{job.pk}", headers=_auth(secret)).status_code == 200
    account.refresh_from_db()
    assert account.quiet_polls == 0 and account.poll_after <= timezone.now()

    # A job that has ended needs no poll: following it wakes nothing.
    Job.objects.filter(pk=job.pk).update(state=JobState.COMPLETED)
    ClusterAccount.objects.filter(pk=account.pk).update(quiet_polls=3, poll_after=later)
    assert client.get(f"/api/v1/jobs/{job.pk}", headers=_auth(secret)).status_code == 200
    account.refresh_from_db()
    assert account.quiet_polls == 3
