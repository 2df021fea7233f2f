"""The GPU-hours a job requests, shown before it is submitted: in the composer's advice and in
the API's recommendation, for one job, a chain and a sweep."""

import html
import re

from tests.test_api_script import JOB as SCRIPT_JOB
from tests.test_api_script import URL as SCRIPT_URL
from tests.test_compose_page import GOOD

RECOMMENDATION_URL = "/api/v1/recommendation"
JOB = {"cluster": "narval", "workload": "training", "dataset_gb": 50, "hours": 12}


def _advice_row(page: str) -> str:
    found = re.search(r'<tr class="gpu-hours">(.*?)</tr>', page, re.S)
    assert found, "the advice has a GPU-hours row"
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", found[1])).split())


def _compose(client, **changes) -> str:
    response = client.post("/jobs/new/", GOOD | changes)
    assert response.status_code == 200
    return response.content.decode()


def test_the_composer_shows_one_jobs_gpu_hours(user_client, seeded):
    row = _advice_row(_compose(user_client, gpu_count="2", multi_gpu="on", hours="4"))
    assert row == "GPU-hours 8 8 GPU-hours (2 GPUs x 4 h)."


def test_the_composer_shows_a_chains_gpu_hours_per_part_and_in_all(user_client, seeded):
    row = _advice_row(_compose(user_client, cluster="beluga", hours="72", checkpointing="on"))
    assert row == (
        "GPU-hours 72 24 GPU-hours (1 GPU x 24 h); a chain of 3 parts: 72 GPU-hours in all."
    )


def test_the_composer_shows_a_sweeps_gpu_hours_per_run_and_in_all(user_client, seeded):
    grid = "lr = 0.1 0.01 0.001\nseed = 1 2"
    command = 'python train.py --lr {lr} --seed {seed} --data "$STAGE_DIR"'
    row = _advice_row(_compose(user_client, sweep_grid=grid, command=command))
    assert row == (
        "GPU-hours 72 12 GPU-hours (1 GPU x 12 h); 6 runs: 12 GPU-hours a run, 72 GPU-hours in all."
    )


def _recommend(client, secret, **changes) -> dict:
    response = client.post(
        RECOMMENDATION_URL,
        JOB | changes,
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert response.status_code == 200, response.content
    return response.json()


def test_the_api_gives_one_jobs_gpu_hours(client, seeded, secret):
    hours = _recommend(client, secret, gpu_count=2, multi_gpu=True, hours=4)["gpu_hours"]
    assert hours == {
        "gpus": 2,
        "hours": 4,
        "per_job": 8,
        "parts": 1,
        "jobs": 1,
        "runs": 1,
        "per_run": 8,
        "total": 8,
        "words": "8 GPU-hours (2 GPUs x 4 h)",
    }


def test_the_api_gives_a_chains_gpu_hours(client, seeded, secret):
    body = _recommend(client, secret, cluster="beluga", hours=72, checkpointing=True)
    hours = body["gpu_hours"]
    assert (hours["per_job"], hours["parts"], hours["total"]) == (24, 3, 72)


def test_the_api_gives_a_sweeps_gpu_hours(client, seeded, secret):
    sweep = {
        "checkpointing": False,
        "hours": 12,
        "command": 'python train.py --lr {lr} --seed {seed} --data "$STAGE_DIR"',
        "sweep_grid": {"lr": ["0.1", "0.01", "0.001"], "seed": ["1", "2"]},
    }
    response = client.post(
        SCRIPT_URL,
        SCRIPT_JOB | sweep,
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret}"},
    )
    assert response.status_code == 200, response.content
    rec = response.json()["recommendation"]
    hours = rec["gpu_hours"]
    assert (hours["runs"], hours["per_run"], hours["total"]) == (6, 12, 72)
    assert hours["total"] == rec["sweep"]["gpu_hours"]


def test_a_runai_cluster_has_no_gpu_hours_to_request(client, seeded, secret):
    assert _recommend(client, secret, cluster="dgx")["gpu_hours"] is None
