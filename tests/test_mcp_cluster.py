"""The MCP endpoint on the real dev cluster: compose, check and dry-run with Slurm's own start
estimate; a plan reaches Slurm only by the user's word, given on the portal's page or, for a
token that may submit, in the agent's client (elicitation), and makes one Slurm job however
often it is confirmed; an agent's cancel reaches scancel."""

import uuid

import pytest
from mcp_types import ElicitResult

from jobs import tasks
from jobs.models import Job, Plan, PlanState, Via
from portal.models import Scope
from tests.test_mcp import answer, run, secret_of, text


@pytest.fixture
def login(transactional_db, local_login):
    # transactional_db first: the live server's thread must see the login committed.
    return local_login


@pytest.fixture(autouse=True)
def submitted_at_once(monkeypatch):
    """The submission task runs as soon as the job commits, in this process, as a worker would."""
    monkeypatch.setattr(tasks.submit_job, "delay", lambda job_id: tasks.submit_job.apply([job_id]))


def _script(name: str) -> str:
    return (
        "#!/bin/bash\n"
        f"#SBATCH --job-name={name}\n"
        "#SBATCH --time=00:02:00\n"
        "#SBATCH --partition=gpu-a100\n"
        "#SBATCH --gres=gpu:a100:1\n"
        "sleep 60\n"
    )


def _slurm_jobs(devcluster, name: str) -> list[str]:
    """The ids Slurm itself holds for jobs of this name: queued or running (squeue, at once) or
    accounted (sacct, which may lag a moment behind)."""
    done = devcluster.ssh(
        f"squeue -h --name={name} -o %i; sacct -n -X -P -S now-1hour --name={name} -o JobID"
    )
    return sorted(set(done.stdout.split()))


def _plan(live_server, user, name: str, scope: Scope = Scope.COMPOSE, **options):
    async def calls(client):
        planned = answer(
            await client.call_tool(
                "plan_script", {"cluster": "local", "name": name, "script": _script(name)}
            )
        )
        asked = await client.call_tool("submit", {"plan_id": planned["id"]})
        return planned, asked

    return run(live_server, secret_of(user, scope), calls, **options)


def test_it_composes_checks_and_dry_runs_on_the_cluster(live_server, user, login):
    composition = {
        "cluster": "local",
        "workload": "training",
        "dataset_gb": 1,
        "hours": 0.5,
        "command": "python train.py",
        "job_name": "mcp-compose",
        "data_path": "$HOME/data.tar",
    }

    async def calls(client):
        planned = answer(await client.call_tool("plan_composition", composition))
        return (
            planned,
            answer(await client.call_tool("dry_run", {"plan_id": planned["id"]})),
            answer(
                await client.call_tool(
                    "check_script", {"cluster": "local", "script": planned["script"]}
                )
            ),
            answer(await client.call_tool("where_to_run", composition)),
        )

    planned, dry, checked, where = run(live_server, secret_of(user, Scope.COMPOSE), calls)
    assert planned["script"].startswith("#!/bin/bash") and planned["gpu_hours"]
    assert dry["start"], dry["start_note"]  # sbatch --test-only's own estimate
    assert checked["cluster"] == "local" and checked["directives"]
    assert [place["cluster"] for place in where["ranking"]] == ["local"]
    assert not Job.objects.exists()


def test_a_plan_confirmed_on_the_page_makes_one_job(live_server, user, login, client, devcluster):
    name = f"mcp-{uuid.uuid4().hex[:8]}"
    planned, asked = _plan(live_server, user, name)
    assert answer(asked)["state"] == PlanState.WAITING
    assert not Job.objects.exists() and _slurm_jobs(devcluster, name) == []

    client.force_login(user)
    for _ in range(2):  # the user confirms twice: one job
        client.post(f"/jobs/plans/{planned['id']}/confirm/")
    job = Job.objects.get()
    assert job.slurm_id and job.via == Via.MCP and job.client == "test-agent 1.0"
    assert Plan.objects.get().job == job
    assert _slurm_jobs(devcluster, name) == [job.slurm_id]

    # The agent reads it, and may not cancel it with a compose token; with a submit one it may.
    async def follow(agent):
        return await agent.call_tool("job", {"job_id": job.pk})

    shown = answer(run(live_server, secret_of(user, Scope.READ), follow))
    assert shown["slurm_id"] == job.slurm_id and "reason_text" in shown

    async def cancel(agent):
        return await agent.call_tool("cancel", {"job_id": job.pk})

    refused = run(live_server, secret_of(user, Scope.COMPOSE), cancel)
    assert refused.is_error and "may compose and check, not submit or cancel" in text(refused)
    assert not answer(run(live_server, secret_of(user, Scope.SUBMIT), cancel)).get("error")


def _says(action: str, submit: bool = True):
    async def elicitation(context, params) -> ElicitResult:
        assert "Submit the job" in params.message and "#SBATCH" in params.message
        content = {"submit": submit} if action == "accept" else None
        return ElicitResult(action=action, content=content)

    return elicitation


def test_a_submit_token_asks_the_user_in_the_client_and_their_yes_makes_one_job(
    live_server, user, login, devcluster
):
    name = f"mcp-{uuid.uuid4().hex[:8]}"
    planned, asked = _plan(
        live_server, user, name, Scope.SUBMIT, elicitation_callback=_says("accept")
    )
    said = answer(asked)
    job = Job.objects.get()
    assert said["state"] == PlanState.SUBMITTED and said["job"]["id"] == job.pk
    assert Plan.objects.get().decided_via == Via.MCP
    assert _slurm_jobs(devcluster, name) == [job.slurm_id]

    async def again(client):  # the same plan again: the same job
        return await client.call_tool("submit", {"plan_id": planned["id"]})

    said = answer(
        run(live_server, secret_of(user, Scope.SUBMIT), again, elicitation_callback=_says("accept"))
    )
    assert said["said"] == f"Submitted already, with the user's word: job {job.pk}."
    assert Job.objects.count() == 1 and _slurm_jobs(devcluster, name) == [job.slurm_id]

    async def cancel(client):
        return await client.call_tool("cancel", {"job_id": job.pk})

    answer(run(live_server, secret_of(user, Scope.SUBMIT), cancel))


@pytest.mark.parametrize(("action", "submit"), [("decline", True), ("accept", False)])
def test_a_no_in_the_client_submits_nothing(live_server, user, login, devcluster, action, submit):
    name = f"mcp-{uuid.uuid4().hex[:8]}"
    _, asked = _plan(
        live_server, user, name, Scope.SUBMIT, elicitation_callback=_says(action, submit)
    )
    assert "nothing submitted" in answer(asked)["said"]
    assert not Job.objects.exists() and _slurm_jobs(devcluster, name) == []
