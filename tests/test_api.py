"""The JSON API (/api/v1/): the recommendation, the clusters, bad input and the OpenAPI schema."""

import re
from typing import Any

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

from guidance import engine

URL = "/api/v1/recommendation"
JOB = {"cluster": "narval", "workload": "training", "dataset_gb": 50, "hours": 12}
STABLE_KEYS = {
    "cluster",
    "guidance_only",
    "storage",
    "partition",
    "gpu",
    "partition_reason",
    "alternatives",
    "resources",
    "chain",
    "warnings",
    "errors",
    "tips",
}


def _bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def _post(client: Client, secret: str | None, body: Any = None, **changes: Any):
    headers = _bearer(secret) if secret else {}
    data = JOB | changes if body is None else body
    return client.post(URL, data, content_type="application/json", headers=headers)


def _errors(response) -> dict[str | None, str]:
    assert response.status_code == 422, response.content
    detail = response.json()["detail"]
    for error in detail:
        assert set(error) == {"field", "code", "message"}
    return {e["field"]: e["message"] for e in detail}


def count_engine_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records the cluster of every engine run from here on, as the API looks the engine up."""
    runs, recommend = [], engine.recommend

    def counted(spec: engine.JobSpec, cluster: engine.Cluster) -> engine.Recommendation:
        runs.append(cluster.slug)
        return recommend(spec, cluster)

    monkeypatch.setattr(engine, "recommend", counted)
    return runs


# --- The recommendation ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dataset_gb", "kind"), [(5, "memory"), (50, "node_local"), (500, "shared")]
)
def test_it_recommends_where_the_data_lives(client, seeded, secret, dataset_gb, kind):
    response = _post(client, secret, dataset_gb=dataset_gb)
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body) >= STABLE_KEYS
    assert body["cluster"] == "narval"
    assert body["storage"]["kind"] == kind
    assert body["storage"]["source"].startswith("001_5f2bc19f2ff4af17.txt, ")
    assert body["errors"] == []


def test_it_chooses_the_2080ti_for_small_inference_on_processing(client, seeded, secret):
    response = _post(
        client, secret, cluster="processing", workload="inference", gpu_mem_gb=8, hours=2
    )
    body = response.json()
    assert body["partition"] == "2080ti"
    assert body["gpu"]["type"] == "2080ti"
    assert body["gpu"]["count"] == 1
    assert body["partition_source"] == "000_6e5e8c8484f3c234.txt, 3. Inference"
    assert {a["partition"] for a in body["alternatives"]}
    assert all(set(a) == {"partition", "why", "source"} for a in body["alternatives"])


def test_a_long_checkpointed_job_becomes_a_chain(client, seeded, secret):
    body = _post(client, secret, cluster="beluga", hours=72, checkpointing=True).json()
    assert body["chain"]["jobs"] == 3
    assert body["chain"]["array"] == "1-3%1"
    assert body["chain"]["hours_per_job"] == 24
    assert body["resources"]["time"] == "1-00:00:00"


def test_it_answers_in_stable_types(client, seeded, secret):
    body = _post(client, secret, file_count=200_000, dataset_gb=50).json()
    assert body["storage"]["archive"] is True
    assert body["chain"] is None
    assert isinstance(body["guidance_only"], bool)
    resources = body["resources"]
    assert resources["mem"].endswith("M")
    assert resources["time"] == "0-12:00:00"
    assert all(isinstance(resources[k], int) for k in ("nodes", "gpus_per_node", "cpus_per_task"))
    storage = body["storage"]
    assert storage["staging"]
    for step in filter(None, [*storage["staging"], storage["copy_back"], storage["cleanup"]]):
        assert set(step) == {"action", "command", "reason", "source"}
    for note in body["warnings"] + body["tips"]:
        assert set(note) == {"code", "message", "source", "field"}
        assert note["source"] is None or isinstance(note["source"], str)


def test_it_counts_every_gpu_of_a_multi_node_job(client, seeded, secret):
    body = _post(client, secret, multi_gpu=True, gpu_count=8, nodes=2).json()
    per_node = body["resources"]["gpus_per_node"]
    assert body["resources"]["nodes"] == 2
    assert body["gpu"]["count"] == 2 * per_node


def test_it_says_a_runai_cluster_takes_no_scripts(client, seeded, secret):
    body = _post(client, secret, cluster="dgx").json()
    assert body["guidance_only"] is True


def test_it_takes_a_gpu_type_case_insensitively(client, seeded, secret):
    body = _post(client, secret, gpu_type=" A100 ").json()
    assert body["gpu"]["type"].casefold() == "a100"


def test_it_runs_the_engine_once(client, seeded, secret, monkeypatch):
    runs = count_engine_runs(monkeypatch)
    assert _post(client, secret).status_code == 200
    assert runs == ["narval"]


def test_it_reads_the_cluster_in_six_queries(client, seeded, secret, django_assert_num_queries):
    # The token and its use, then the cluster with everything the engine reads.
    with django_assert_num_queries(2 + 6):
        assert _post(client, secret).status_code == 200


# --- Bad input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"dataset_gb": "lots"}, "dataset_gb"),  # the schema's check
        ({"dataset_gb": -5}, "dataset_gb"),  # the engine's checks from here on
        ({"hours": 0}, "hours"),
        ({"gpu_type": "h100"}, "gpu_type"),
        ({"cluster": "nowhere"}, "cluster"),
        ({"workload": "mining"}, "workload"),
        ({"gpu_count": 1.5}, "gpu_count"),
        ({"data_location": "node_local"}, "data_location"),
        ({"gpu_mem_gb": 500}, "gpu_mem_gb"),
        ({"hours": 500}, "hours"),  # over the maximum without checkpoints
        ({"gpu_typ": "a100"}, "gpu_typ"),  # a misspelt field is not silently ignored
    ],
)
def test_it_names_the_field_at_fault(client, seeded, secret, changes, field):
    errors = _errors(_post(client, secret, **changes))
    assert field in errors
    assert errors[field]


def test_it_names_a_missing_field(client, seeded, secret):
    body = {k: v for k, v in JOB.items() if k != "workload"}
    assert _errors(_post(client, secret, body=body)) == {"workload": "Field required"}


def test_it_lists_every_fault_at_once(client, seeded, secret):
    errors = _errors(_post(client, secret, dataset_gb="lots", hours="long", nodes="two"))
    assert set(errors) == {"dataset_gb", "hours", "nodes"}


def test_it_says_which_clusters_exist(client, seeded, secret):
    errors = _errors(_post(client, secret, cluster="nowhere"))
    assert "narval" in errors["cluster"]


def test_it_gives_the_engine_error_code(client, seeded, secret):
    detail = _post(client, secret, gpu_type="h100").json()["detail"]
    assert detail[0]["code"] == "unknown_gpu_type"
    assert "has no GPU type 'h100'" in detail[0]["message"]


@pytest.mark.parametrize("body", ["NaN", "Infinity"])
def test_it_refuses_numbers_that_are_not_numbers(client, seeded, secret, body):
    # Python's json module reads these, although JSON has no such numbers.
    raw = '{"cluster": "narval", "workload": "training", "hours": 12, "dataset_gb": NUMBER}'
    raw = raw.replace("NUMBER", body)
    errors = _errors(_post(client, secret, body=raw))
    assert set(errors) == {"dataset_gb"}


def test_an_empty_body_names_every_required_field(client, seeded, secret):
    response = client.post(URL, content_type="application/json", headers=_bearer(secret))
    assert set(_errors(response)) == {"cluster", "workload", "dataset_gb", "hours"}


def test_a_body_that_is_not_an_object_is_an_error_about_the_whole_request(client, seeded, secret):
    assert list(_errors(_post(client, secret, body=[JOB]))) == [None]


def test_a_body_that_is_not_json_is_a_bad_request(client, seeded, secret):
    response = _post(client, secret, body="{cluster: narval")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("Cannot parse request body")


# --- Clusters ----------------------------------------------------------------------------


def test_it_lists_the_clusters(client, seeded, secret):
    response = client.get("/api/v1/clusters", headers=_bearer(secret))
    assert response.status_code == 200
    clusters = {c["slug"]: c for c in response.json()}
    assert {"narval", "beluga", "processing", "dgx"} <= set(clusters)
    narval = clusters["narval"]
    assert narval["scheduler"] == "slurm"
    assert narval["guidance_only"] is False
    assert {"name", "memory_gb"} == set(narval["gpu_types"][0])
    assert clusters["dgx"]["guidance_only"] is True


# --- The OpenAPI schema ------------------------------------------------------------------


def _resolve(schema: dict, spec: dict) -> dict:
    while "$ref" in schema:
        name = schema["$ref"].removeprefix("#/components/schemas/")
        schema = spec["components"]["schemas"][name]
    return schema


def _check(value: Any, schema: dict, spec: dict, where: str) -> None:
    """A small validator: enough of JSON Schema for the shapes this API documents."""
    schema = _resolve(schema, spec)
    if "anyOf" in schema:
        options = [_resolve(s, spec) for s in schema["anyOf"]]
        if value is None:
            assert any(o.get("type") == "null" for o in options), f"{where}: null not allowed"
            return
        schema = next(o for o in options if o.get("type") != "null")
    if "enum" in schema:
        assert value in schema["enum"], f"{where}: {value!r} not in {schema['enum']}"
    kind = schema.get("type")
    types = {
        "object": dict,
        "array": list,
        "string": str,
        "integer": int,
        "number": (int, float),
        "boolean": bool,
    }
    if kind:
        assert isinstance(value, types[kind]), f"{where}: {value!r} is not {kind}"
    if kind in ("integer", "number"):
        assert not isinstance(value, bool), f"{where}: {value!r} is not {kind}"
    if kind == "object":
        properties = schema.get("properties", {})
        undocumented = set(value) - set(properties)
        assert not undocumented, f"{where}: undocumented {undocumented}"
        missing = set(schema.get("required", ())) - set(value)
        assert not missing, f"{where}: missing {missing}"
        for key, item in value.items():
            _check(item, properties[key], spec, f"{where}.{key}")
    if kind == "array":
        for i, item in enumerate(value):
            _check(item, schema["items"], spec, f"{where}[{i}]")


def _documented(spec: dict, path: str, method: str, status: str) -> dict:
    operation = spec["paths"][path][method]
    return operation["responses"][status]["content"]["application/json"]["schema"]


def test_the_schema_is_served_without_a_token(client, db):
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    spec = response.json()
    assert spec["info"]["title"] == "GPU portal API"
    assert "bearer" in str(spec["components"]["securitySchemes"]).lower()


def test_the_interactive_docs_need_no_internet(client, db):
    # Swagger UI comes from the portal's own static files, not a CDN the users may not reach.
    page = client.get("/api/v1/docs")
    assert page.status_code == 200
    html = page.content.decode()
    for script in re.findall(r'(?:src|href)="([^"]+\.(?:js|css))"', html):
        assert script.startswith("/static/"), script
        assert finders.find(script.removeprefix("/static/")), f"{script} is not served"
    assert "swagger-ui-bundle.js" in html and "/api/v1/openapi.json" in html


def test_the_recommendation_matches_its_schema(client, seeded, secret):
    spec = client.get("/api/v1/openapi.json").json()
    documented = _resolve(_documented(spec, URL, "post", "200"), spec)
    assert set(documented["properties"]) >= STABLE_KEYS
    assert set(documented["required"]) >= STABLE_KEYS
    storage = _resolve(documented["properties"]["storage"], spec)
    assert set(storage["properties"]) >= {"kind", "archive", "tier", "reason", "source", "staging"}

    for job in (
        JOB,
        JOB | {"dataset_gb": 5, "file_count": 200_000},
        JOB | {"cluster": "beluga", "hours": 72, "checkpointing": True},
        JOB | {"cluster": "processing", "workload": "inference", "gpu_mem_gb": 8},
        JOB | {"cluster": "dgx"},
    ):
        response = _post(client, secret, body=job)
        assert response.status_code == 200, response.content
        _check(response.json(), documented, spec, job["cluster"])


def test_the_errors_match_their_schema(client, seeded, secret):
    spec = client.get("/api/v1/openapi.json").json()
    for changes in ({"dataset_gb": "lots"}, {"gpu_type": "h100"}, {"cluster": "nowhere"}):
        response = _post(client, secret, **changes)
        assert response.status_code == 422
        _check(response.json(), _documented(spec, URL, "post", "422"), spec, "422")
    response = _post(client, None)
    _check(response.json(), _documented(spec, URL, "post", "401"), spec, "401")


def test_the_clusters_match_their_schema(client, seeded, secret):
    spec = client.get("/api/v1/openapi.json").json()
    response = client.get("/api/v1/clusters", headers=_bearer(secret))
    _check(response.json(), _documented(spec, "/api/v1/clusters", "get", "200"), spec, "clusters")
