"""A sweep over the API (POST /script): a grid or run objects become the same runs the composer
makes, the recommendation says how they go into jobs, and a sweep it cannot run is a 422 that
names its field."""

import re
import shlex
import subprocess

import pytest

from jobs.compose import sweep_script
from tests.test_api import _check, _documented, _resolve
from tests.test_api_script import JOB, URL

SWEEP = JOB | {
    "checkpointing": False,
    "hours": 12,
    "command": 'python train.py --lr {lr} --seed {seed} --data "$STAGE_DIR"',
    "sweep_grid": {"lr": ["0.1", "0.01", "0.001"], "seed": ["1", "2"]},
}


@pytest.fixture
def headers(secret):
    return {"Authorization": f"Bearer {secret}"}


def _post(client, headers, **changes):
    return client.post(URL, SWEEP | changes, content_type="application/json", headers=headers)


def _errors(response) -> dict[str, str]:
    assert response.status_code == 422, response.content
    return {e["field"]: e["message"] for e in response.json()["detail"]}


def test_a_grid_is_an_array_of_six_runs_each_with_its_values(client, seeded, headers):
    response = _post(client, headers)
    assert response.status_code == 200, response.content
    body = response.json()
    script = body["script"]
    assert subprocess.run(["bash", "-n"], input=script.encode(), check=False).returncode == 0
    assert re.search(r"^#SBATCH --array=1-6$", script, re.M)
    assert len(re.findall(r"^ +\d\) RUN_NAME=", script, re.M)) == 6
    runs = sweep_script.runs_in(script)
    assert [dict(run.values) for run in runs][-1] == {"lr": "0.001", "seed": "2"}
    assert "JOB_COMMAND='python train.py --lr 0.001 --seed 2 --data \"$STAGE_DIR\"'" in script
    sweep = body["recommendation"]["sweep"]
    assert sweep["grouping"] == "array"
    assert (sweep["runs"], sweep["jobs"], sweep["runs_per_job"]) == (6, 6, 1)
    assert (sweep["minutes_per_job"], sweep["gpu_hours"]) == (720, 72)
    assert "one job array, a task per run" in sweep["reason"]
    assert "Running many similar jobs" in sweep["source"]


def test_values_with_spaces_and_quotes_reach_the_runs_as_they_are(client, seeded, headers):
    tags = ["a b", "it's", '"quoted"', "a,b", "$(whoami)"]
    response = _post(client, headers, sweep_grid={"tag": tags}, command="python train.py {tag}")
    script = response.json()["script"]
    assert [dict(run.values)["tag"] for run in sweep_script.runs_in(script)] == tags
    last = re.search(r"^ +5\) .* JOB_COMMAND=(\S.*) ;;$", script, re.M)[1]
    assert shlex.split(shlex.split(last)[0]) == ["python", "train.py", "$(whoami)"]


def test_run_objects_give_the_runs_in_order_and_the_page_writes_the_same(
    client, seeded, headers, user_client
):
    runs = [{"lr": "0.1", "seed": "7"}, {"seed": "1", "lr": "0.5"}]
    body = _post(client, headers, sweep_grid=None, sweep_runs=runs, runs_at_once=1).json()
    script = body["script"]
    assert re.search(r"^#SBATCH --array=1-2%1$", script, re.M)
    assert [dict(run.values) for run in sweep_script.runs_in(script)] == runs
    assert "(%1)" in body["recommendation"]["sweep"]["reason"]
    # The composer's page, given the same runs as text, writes the same script.
    form = {k: str(v) for k, v in JOB.items() if not isinstance(v, (bool, list))}
    form |= {"modules": "python/3.11 cuda", "environment": "none", "gpu_count": "1"}
    form |= {"nodes": "1", "similar_runs": "1", "hours": "12", "command": SWEEP["command"]}
    form |= {"sweep_runs": "lr=0.1 seed=7\nseed=1 lr=0.5", "runs_at_once": "1", "download": "1"}
    assert user_client.post("/jobs/new/", form).content.decode() == script


def test_short_runs_are_grouped_in_one_job(client, seeded, headers):
    body = _post(client, headers, hours=0.25).json()
    assert "--array" not in body["script"]
    assert 'SWEEP_RUNS="1 2 3 4 5 6"' in body["script"]
    sweep = body["recommendation"]["sweep"]
    assert (sweep["grouping"], sweep["jobs"], sweep["runs_per_job"]) == ("grouped", 1, 6)
    assert sweep["gpu_hours"] == 1.5


def test_repeats_are_a_sweep_of_their_own(client, seeded, headers):
    body = _post(client, headers, sweep_grid=None, similar_runs=3, command="python a.py").json()
    assert re.search(r"^#SBATCH --array=1-3$", body["script"], re.M)
    assert [run.folder for run in sweep_script.runs_in(body["script"])] == [
        "run-001",
        "run-002",
        "run-003",
    ]
    assert body["recommendation"]["sweep"]["runs"] == 3


@pytest.mark.parametrize(
    ("grid", "said"),
    [
        ({"status": ["1", "2"]}, "status is the job's own variable"),
        ({"lr": []}, "lr has no values"),
        ({"lr": [""]}, "lr has an empty value"),
        ({"lr": ["0.1,"]}, "ends with a comma"),
        # A line break the composer's text would split the value at, said as one.
        ({"lr": ["a\u2028b"]}, "line break"),
        ({"lr": ["a\x85b"]}, "line break"),
        ({"lr = 1": ["2"]}, "is not a parameter name"),
        ({"a": [str(i) for i in range(40)], "b": [str(i) for i in range(50)]}, "2,000 runs"),
    ],
)
def test_a_grid_it_cannot_run_is_a_422_naming_the_grid(client, seeded, headers, grid, said):
    errors = _errors(_post(client, headers, sweep_grid=grid))
    assert said in errors["sweep_grid"]


@pytest.mark.parametrize(
    ("changes", "field", "said"),
    [
        ({"command": "python train.py {batch}"}, "command", "{batch}, which is not a parameter"),
        ({"similar_runs": 4}, "similar_runs", "The sweep has 6 runs"),
        ({"sweep_runs": [{"lr": "1"}]}, "sweep_runs", "a grid or one line per run, not both"),
        (
            {"sweep_grid": None, "sweep_runs": [{"lr": "1", "seed": "1"}, {"lr": "2"}]},
            "sweep_runs",
            "every run gives the same parameters",
        ),
        ({"sweep_grid": None, "sweep_runs": [{"PATH": "/x"}]}, "sweep_runs", "job's own variable"),
        ({"runs_at_once": 0}, "runs_at_once", "greater than or equal to 1"),
    ],
)
def test_a_sweep_it_cannot_run_is_a_422_naming_its_field(
    client, seeded, headers, changes, field, said
):
    errors = _errors(_post(client, headers, **changes))
    assert said in errors[field]


def test_a_sweep_of_long_runs_chains_each_run_in_its_own_task(client, seeded, headers):
    body = _post(client, headers, hours=200, checkpointing=True).json()
    script = body["script"]
    assert "#SBATCH --array=1-6\n" in script  # a task per run, not per part
    assert "#SBATCH --requeue\n" in script
    assert 'scontrol requeue "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"' in script
    codes = {tip["code"] for tip in body["recommendation"]["tips"]}
    assert "sweep_of_chains" in codes


def test_the_schema_documents_the_sweep_fields_and_the_plan(client, seeded, headers):
    spec = client.get("/api/v1/openapi.json").json()
    operation = spec["paths"][URL]["post"]
    taken = _resolve(operation["requestBody"]["content"]["application/json"]["schema"], spec)
    for name in ("sweep_grid", "sweep_runs", "runs_at_once"):
        assert taken["properties"][name]["description"], name
    assert "{lr}" in taken["properties"]["sweep_grid"]["description"]
    answered = _resolve(_documented(spec, URL, "post", "200"), spec)
    recommendation = _resolve(answered["properties"]["recommendation"], spec)
    documented = recommendation["properties"]["sweep"]
    options = [_resolve(o, spec) for o in documented["anyOf"]]
    plan = next(o for o in options if o.get("type") != "null")
    assert set(plan["properties"]) == {
        "grouping",
        "jobs",
        "runs_per_job",
        "minutes_per_job",
        "gpu_hours",
        "runs",
        "reason",
        "source",
    }
    # What the endpoint answers fits what it documents, with a sweep and without.
    for changes in ({}, {"sweep_grid": None}):
        body = _post(client, headers, **changes).json()
        _check(body, _documented(spec, URL, "post", "200"), spec, "script")
