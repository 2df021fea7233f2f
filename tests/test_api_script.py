"""POST /api/v1/script: the composer's script over the API, with the same rules as the page."""

import subprocess

import pytest

from portal.models import ApiToken
from tests.test_api import count_engine_runs

URL = "/api/v1/script"
JOB = {
    "cluster": "narval",
    "workload": "training",
    "dataset_gb": 50,
    "file_count": 200_000,
    "hours": 72,
    "checkpointing": True,
    "job_name": "resnet",
    "account": "def-someuser",
    "data_path": "/project/def-someuser/data.tar",
    "results_dir": "$HOME/results",
    "modules": ["python/3.11", "cuda"],
    "command": 'python train.py --data "$STAGE_DIR"',
}


@pytest.fixture
def headers(user):
    return {"Authorization": f"Bearer {ApiToken.issue(user, 'cli')[1]}"}


def _post(client, headers, **changes):
    return client.post(URL, JOB | changes, content_type="application/json", headers=headers)


def test_it_requires_a_token(client, seeded):
    assert _post(client, {}).status_code == 401


def test_it_returns_the_script_and_its_advice(client, seeded, headers):
    body = _post(client, headers).json()
    assert body["filename"] == "resnet.sbatch"
    script = body["script"]
    assert subprocess.run(["bash", "-n"], input=script.encode(), check=False).returncode == 0
    assert "#SBATCH --array=1-3%1" in script
    assert 'tar -xf "$DATA_SOURCE" -C "$STAGE_DIR"' in script
    assert "module load python/3.11 cuda" in script
    assert body["salloc"].startswith("salloc --account=def-someuser --nodes=1")
    assert body["recommendation"]["storage"]["kind"] == "node_local"
    assert body["recommendation"]["chain"]["jobs"] == 3


def test_the_same_form_gives_the_same_script_as_the_page(client, seeded, headers, user_client):
    api_script = _post(client, headers).json()["script"]
    form = {k: str(v) for k, v in JOB.items() if not isinstance(v, (bool, list))}
    form |= {"checkpointing": "on", "modules": "python/3.11 cuda", "environment": "none"}
    form |= {"gpu_count": "1", "nodes": "1", "similar_runs": "1", "download": "1"}
    assert user_client.post("/jobs/new/", form).content.decode() == api_script


@pytest.mark.parametrize(("changes", "status"), [({}, 200), ({"job_name": "x; rm -rf ~"}, 422)])
def test_it_runs_the_engine_once(client, seeded, headers, monkeypatch, changes, status):
    runs = count_engine_runs(monkeypatch)
    assert _post(client, headers, **changes).status_code == status
    assert runs == ["narval"]


def test_a_padded_data_path_is_planned_as_the_page_plans_it(client, seeded, headers):
    # The form strips the path it writes into the script: the plan must read it the same way.
    body = _post(client, headers, data_path=" /project/def-someuser/images.zip ").json()
    assert body["recommendation"]["storage"]["data_kind"] == "archive"
    assert "unzip -q" in body["script"]
    assert "DATA_SOURCE=/project/def-someuser/images.zip" in body["script"]


# Inference on the processing cluster reads its data in place, from $HOME.
READ_IN_PLACE = {
    "cluster": "processing",
    "workload": "inference",
    "dataset_gb": 500,
    "file_count": 0,
    "hours": 2,
    "checkpointing": False,
    "modules": [],
    "data_path": "$HOME/data.tar",
}


def test_the_plan_shows_the_clean_up_of_a_virtualenv_built_on_the_node(client, seeded, headers):
    # The virtualenv goes to the $SCRATCH every job on the node shares: the job removes it.
    built = {"environment": "requirements", "environment_path": "$HOME/requirements.txt"}
    body = _post(client, headers, **READ_IN_PLACE, **built).json()
    storage = body["recommendation"]["storage"]
    assert storage["kind"] == "shared" and storage["staging"] == []
    assert storage["cleanup"]["command"] == 'rm -rf "$WORK_DIR"'
    assert 'WORK_DIR="$SCRATCH/$SLURM_JOB_ID"' in body["script"]
    assert '    rm -rf "$WORK_DIR" || true' in body["script"]
    plain = _post(client, headers, **READ_IN_PLACE).json()
    assert plain["recommendation"]["storage"]["cleanup"] is None
    assert "WORK_DIR" not in plain["script"]


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"job_name": "x; rm -rf ~"}, "job_name", "no spaces"),
        ({"modules": ["cuda", "$(id)"]}, "modules", "Not a module name"),
        ({"dataset_gb": -1}, "dataset_gb", "cannot be negative"),
        ({"data_path": ""}, "data_path", "Enter the data path"),
        ({"data_path": "$HOME/shards/shard-*.tar"}, "data_path", "holds a pattern (*)"),
        ({"command": "echo \x1b[31m"}, "command", "control characters"),
        ({"command": "echo \x00"}, "command", "Null characters are not allowed"),
        ({"cluster": "dgx"}, "cluster", "writes no script"),
    ],
)
def test_bad_input_is_422_on_its_field(client, seeded, headers, changes, field, words):
    response = _post(client, headers, **changes)
    assert response.status_code == 422, response.content
    messages = {e["field"]: e["message"] for e in response.json()["detail"]}
    assert words in messages[field], messages


def test_the_schema_documents_the_endpoint(client, seeded):
    schema = client.get("/api/v1/openapi.json").json()
    operation = schema["paths"]["/api/v1/script"]["post"]
    assert {"200", "401", "422"} <= set(operation["responses"])


@pytest.mark.parametrize(
    ("data_path", "data_kind", "taken_as", "command"),
    [
        ("/project/def-someuser/weights.h5", None, "file", 'cp "$DATA_SOURCE" "$STAGE_DIR"/'),
        ("/project/def-someuser/images", "archive", "archive", "tar -xf"),
        ("/project/def-someuser/images.zip", None, "archive", "unzip -q"),
    ],
)
def test_the_data_kind_is_asked_or_taken_from_the_name(
    client, seeded, headers, data_path, data_kind, taken_as, command
):
    changes = {"data_path": data_path} | ({"data_kind": data_kind} if data_kind else {})
    body = _post(client, headers, **changes).json()
    assert body["recommendation"]["storage"]["data_kind"] == taken_as
    assert command in body["script"]


def test_an_unknown_data_kind_is_422_on_its_field(client, seeded, headers):
    answer = _post(client, headers, data_kind="tape")
    assert answer.status_code == 422
    assert [e["field"] for e in answer.json()["detail"]] == ["data_kind"]


def test_it_tells_how_the_command_starts_and_takes_the_users_word_for_it(client, seeded, headers):
    two_nodes = {"nodes": 2, "multi_gpu": True, "gpu_count": 8, "hours": 12}
    told = _post(client, headers, command="srun python train.py", **two_nodes).json()
    assert told["recommendation"]["launch"]["kind"] == "gpu-tasks"
    assert told["recommendation"]["launch"]["told"] is False
    assert told["recommendation"]["resources"]["tasks_per_node"] == 4
    assert "#SBATCH --ntasks-per-node=4" in told["script"]
    chosen = _post(client, headers, command="bash run.sh", launch="node-tasks", **two_nodes).json()
    assert chosen["recommendation"]["launch"] | {"reason": ""} == {
        "kind": "node-tasks",
        "reason": "",
        "told": True,
    }
    assert "#SBATCH --ntasks-per-node=1" in chosen["script"]
    wrong = _post(client, headers, launch="everywhere", **two_nodes)
    assert wrong.status_code == 422
    assert wrong.json()["detail"][0]["field"] == "launch"


def test_values_set_by_hand_are_taken_as_the_composer_takes_them(client, seeded, headers):
    body = _post(client, headers, memory="200G", cpus_per_task=8, gpu_type="A100").json()
    assert "#SBATCH --mem=204800M" in body["script"]
    assert "#SBATCH --cpus-per-task=8" in body["script"]
    warnings = {w["code"] for w in body["recommendation"]["warnings"]}
    assert "memory_over_guidance" in warnings


def test_a_time_over_the_maximum_is_refused_naming_the_field(client, seeded, headers):
    answer = _post(client, headers, time_limit="8-00:00:00")
    assert answer.status_code == 422
    [error] = answer.json()["detail"]
    assert error["field"] == "time_limit"
    assert "may run 7 days at most" in error["message"]
