"""What must hold for every composition, on every cluster, whatever the user asks and sets by hand:
the chain covers the work, the request fits the node type and the shares the advice states (or the
user's own value, warned), every value the user gave is in the script or a warning says why not,
the script parses and the portal's own checker finds nothing wrong with it, and the advice and the
script say the same numbers; what the user wrote (paths with variables anywhere, modules, similar
runs) reaches the job as meant; the API writes the page's script; a cluster without Slurm gets
advice and no script. Hypothesis draws the compositions (INVARIANT_EXAMPLES of them for the first
test, fewer for the others); a failing example it finds becomes a plain test beside the rule it
broke."""

import math
import os
import re
import subprocess
from unittest import mock

import pytest
from django.contrib.auth.models import User
from django.test import Client
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from guidance.engine import Placement, sources
from guidance.engine.script_check import check_script
from guidance.engine.script_check.findings import Severity
from guidance.engine.slurm_time import parse_seconds
from guidance.facts import cluster_facts
from guidance.seed import CLUSTERS as SEED
from jobs.compose.forms import SLURM_ONLY, ComposeForm
from jobs.compose.from_form import compose
from jobs.compose.sweep_script import runs_in
from jobs.slurm.values import parse_memory_mb
from portal.models import ApiToken

SLURM_CLUSTERS = ["narval", "beluga", "cedar", "graham", "processing"]
EXAMPLES = int(os.environ.get("INVARIANT_EXAMPLES", "250"))
TIME_LIMITS = ["", "", "2:00:00", "12:00:00", "1-00:00:00", "3-00:00:00"]
MEMORY = ["", "", "16G", "64000M", "200G"]
CPUS = ["", "", "2", "8", "16"]


def _form(cluster: str) -> st.SearchStrategy[dict]:
    facts = next(seeded.facts for seeded in SEED if seeded.facts.slug == cluster)
    processing = cluster == "processing"  # no modules published, no path for project storage
    return st.fixed_dictionaries(
        {
            "cluster": st.just(cluster),
            "job_name": st.from_regex(r"[a-z][a-z0-9_-]{0,12}", fullmatch=True),
            "account": st.just("" if processing else "def-someone"),
            "workload": st.sampled_from(["training", "inference", "debugging"]),
            "dataset_gb": st.sampled_from(["0.5", "20", "90", "150", "300", "900"]),
            "file_count": st.sampled_from(["", "1", "40", "200000"]),
            "data_path": st.just(
                "/project/d/imagenet.tar" if processing else "$PROJECT/data/imagenet.tar"
            ),
            "gpu_type": st.sampled_from(["", *(g.name for g in facts.gpu_types)]),
            "gpu_count": st.sampled_from(["1", "2", "3", "4", "8", "16"]),
            "hours": st.sampled_from(["0.5", "3", "12", "30", "60", "100"]),
            "nodes": st.sampled_from(["1", "1", "2", "4"]),
            "similar_runs": st.just("1"),
            "modules": st.just("" if processing else "python/3.11"),
            "environment": st.just("none"),
            "command": st.just("python train.py --data $DATA_PATH"),
            "results_dir": st.just("/project/r" if processing else "$SCRATCH/results"),
            "time_limit": st.sampled_from(TIME_LIMITS),
            "memory": st.sampled_from(MEMORY),
            "cpus_per_task": st.sampled_from(CPUS),
        },
        optional={"checkpointing": st.just("on"), "multi_gpu": st.just("on")},
    )


FORMS = st.sampled_from(SLURM_CLUSTERS).flatmap(_form)


def _directive(script: str, name: str) -> str | None:
    match = re.search(rf"^#SBATCH --{name}=(\S+)$", script, re.MULTILINE)
    return match.group(1) if match else None


def _share(ratio: int, node: int, gpus: int, *, more: bool = False) -> int:
    """The node's split where it is clearly (10 %) less than the ratio, or, with `more` (CPUs),
    clearly more; the ratio otherwise."""
    split = node // gpus
    return split if split * 1.1 < ratio or (more and split > ratio * 1.1) else ratio


def _warned(rec, *fields: str) -> bool:
    return any(note.field in fields for note in (*rec.warnings, *rec.errors))


def _composed(form_data: dict):
    form = ComposeForm(form_data)
    composed = compose(form)
    if composed is None or not composed.script:
        # Refused: each refusal must say why, beside a field or above the form.
        assert form.errors, form_data
        return None, form
    return composed, form


@pytest.mark.django_db
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=FORMS)
def test_every_composition_keeps_its_promises(seeded, data):
    composed, form = _composed(data)
    event("refused" if composed is None else "composed")
    if composed is None:
        return
    rec, script = composed.recommendation, composed.script
    partition, r = rec.choice.partition, rec.resources
    policy = rec.cluster.policy

    # The script parses.
    assert subprocess.run(["bash", "-n"], input=script.encode(), check=False).returncode == 0

    # The request fits the node type.
    assert r.gpus_per_node.value <= partition.gpus_per_node
    assert r.cpus_per_task.value * r.tasks_per_node.value <= partition.cpus_per_node
    assert r.memory_mb.value <= partition.memory_per_node_mb
    assert r.minutes.value <= math.ceil(partition.max_hours * 60)

    # Staging follows the site's own rule: a site that stages training data whatever its size
    # (000) never leaves it on the network; elsewhere node-local storage is used within its limit.
    placement = rec.storage.placement
    if policy.stages_training_data and data["workload"] == "training":
        assert placement in (Placement.MEMORY, Placement.NODE_LOCAL), (placement, data)
    elif placement == Placement.NODE_LOCAL and not (
        partition.node_local_gb or policy.stages_training_data
    ):
        assert float(data["dataset_gb"]) <= policy.node_local_limit_gb, data

    # The chain's parts (or the one job) cover the work, or a warning says they do not.
    parts = rec.chain.jobs if rec.chain else 1
    seconds = parse_seconds(_directive(script, "time"))
    if parts * seconds < float(data["hours"]) * 3600 - 60:
        assert data.get("checkpointing") != "on", (parts, seconds, data)
        assert _warned(rec, "time_limit", "hours", "checkpointing"), (parts, seconds, data)

    # Each GPU's share of its node, unless the user set the value (and is warned): the cluster's
    gpus = r.gpus_per_node.value
    # ratio, or the node type's own split where the ratio is clearly (10 %) more than that (for
    # CPUs, or clearly less: Cedar's v100l nodes have 8 per GPU where the ratio says 6).
    published = partition.source != sources.PORTAL_PLACEHOLDERS  # placeholders never raise it
    cpu_share = _share(
        policy.cpus_per_gpu, partition.cpus_per_node, partition.gpus_per_node, more=published
    )
    memory_share = _share(
        policy.memory_per_gpu_mb, partition.memory_per_node_mb, partition.gpus_per_node
    )
    cpus = r.cpus_per_task.value * r.tasks_per_node.value
    if not data["cpus_per_task"]:
        assert cpus <= max(gpus * cpu_share, r.tasks_per_node.value), f"{cpus} CPUs: {data}"
        assert str(cpu_share) in r.cpus_per_task.reason, r.cpus_per_task.reason
    elif cpus > gpus * cpu_share:
        assert _warned(rec, "cpus_per_task")
    memory = parse_memory_mb(_directive(script, "mem"))
    in_memory = rec.storage.placement == Placement.MEMORY
    held = float(data["dataset_gb"]) * 1000 if in_memory else 0  # the data the job holds
    if not data["memory"]:
        assert memory <= gpus * memory_share + held, f"{memory}M for {gpus} GPUs: {data}"
        assert f"{memory_share}M" in r.memory_mb.reason, r.memory_mb.reason
    elif memory > min(gpus * memory_share + held, partition.memory_per_node_mb):
        assert _warned(rec, "memory")

    # Every value the user gave is in the script, or a warning says why not.
    assert _directive(script, "job-name") == data["job_name"]
    assert data["command"] in script
    total = r.gpus_per_node.value * r.nodes.value
    if total != int(data["gpu_count"]):
        assert _warned(rec, "gpu_count", "nodes"), f"{total} GPUs for {data}"
    if r.nodes.value != int(data["nodes"]):
        assert _warned(rec, "nodes", "gpu_count"), f"{r.nodes.value} nodes for {data}"
    if data["time_limit"]:
        assert seconds == parse_seconds(data["time_limit"])
    if data["memory"]:
        assert memory == parse_memory_mb(data["memory"])
    if data["cpus_per_task"]:
        assert _directive(script, "cpus-per-task") == data["cpus_per_task"]

    # The advice and the script say the same numbers.
    assert _directive(script, "time") == r.time
    assert _directive(script, "mem") == r.mem
    assert _directive(script, "nodes") in (None, str(r.nodes.value))
    assert _directive(script, "cpus-per-task") == str(r.cpus_per_task.value)
    if rec.chain:
        assert _directive(script, "array") == rec.chain.array

    # The portal's own checker finds nothing that would fail or waste, where nothing is set by
    # hand (a value set by hand is the user's, and the composer has warned about it already).
    facts = cluster_facts(form.cleaned_data["cluster"])
    findings = check_script(script, facts, "def-someone").notes
    serious = [(f.code, f.message) for f in findings if f.severity != Severity.ADVICE]
    by_hand = [name for name in ("time_limit", "memory", "cpus_per_task") if data[name]]
    if not by_hand:
        assert serious == [], (data, script)
    elif serious:
        # Whatever the checker finds in a script with values set by hand, the composer has
        # already said beside a field the user set.
        event("values by hand the checker objects to")
        assert _warned(rec, *by_hand), (serious, data)


# A job's environment on each kind of site, for reading back what the script's values become.
FEDERATION_ENV = {
    "HOME": "/home/ada",
    "USER": "ada",
    "SCRATCH": "/scratch/ada",
    "PROJECT": "/project/def-ada",
    "SLURM_TMPDIR": "/localscratch/ada.42.0",
    "SLURM_JOB_ID": "42",
}
PROCESSING_ENV = {"HOME": "/home/ada", "USER": "ada", "SLURM_JOB_ID": "42"}
SEGMENTS = ["data", "my data", "$USER", "${USER}", "it's", "set-1", "$SLURM_JOB_ID", "a  b"]


def _path(starts: list[str], ends: list[str]) -> st.SearchStrategy[str]:
    return st.builds(
        lambda start, middle, end: "/".join([start, *middle]) + end,
        st.sampled_from(starts),
        st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=3),
        st.sampled_from(ends),
    )


def _written(cluster: str) -> st.SearchStrategy[dict]:
    processing = cluster == "processing"
    starts = ["~", "$HOME", "/project/d"] + ([] if processing else ["$PROJECT", "$SCRATCH"])
    return st.fixed_dictionaries(
        {
            "cluster": st.just(cluster),
            "job_name": st.just("reach"),
            "account": st.just("" if processing else "def-ada"),
            "workload": st.sampled_from(["training", "inference"]),
            "dataset_gb": st.sampled_from(["0.5", "20", "150"]),
            "file_count": st.just(""),
            "data_path": _path(starts, [".tar", ".h5", ""]),
            "gpu_type": st.just(""),
            "gpu_count": st.sampled_from(["1", "2"]),
            "hours": st.sampled_from(["3", "60"]),
            "nodes": st.just("1"),
            "similar_runs": st.sampled_from(["1", "1", "3"]),
            "modules": st.just("")
            if processing
            else st.permutations(["python/3.11", "cuda", "arrow/17"]).map(" ".join),
            "environment": st.sampled_from(["none", "venv"]),
            "environment_path": _path(starts, [""]),
            "command": st.just("python train.py"),
            "results_dir": _path(starts, [""]),
            "time_limit": st.just(""),
            "memory": st.just(""),
            "cpus_per_task": st.just(""),
        },
        optional={"checkpointing": st.just("on")},
    )


def _expanded(path: str, env: dict[str, str]) -> str:
    """What the user meant, by Python's own reading of ~ and $NAME."""
    with mock.patch.dict(os.environ, env, clear=True):
        return os.path.expanduser(os.path.expandvars(path))


def _values(script: str, env: dict[str, str], names: list[str]) -> dict[str, str]:
    """The script's own assignments run by bash in the job's environment, read back."""
    prefix = script.split("set -euo pipefail\n", 1)[1].split("\nexport DATA_SOURCE")[0]
    program = f"{prefix}\nfor n in {' '.join(names)}; do printf '%s\\0' \"${{!n}}\"; done"
    result = subprocess.run(
        ["bash", "-c", program],
        capture_output=True,
        env=env | {"PATH": "/usr/bin:/bin"},
        check=True,
    )
    return dict(zip(names, result.stdout.decode().split("\0")[:-1], strict=True))


@pytest.mark.django_db
@settings(
    max_examples=max(1, EXAMPLES // 2),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.sampled_from(SLURM_CLUSTERS).flatmap(_written))
def test_what_the_user_wrote_reaches_the_job(seeded, data):
    """Paths with variables anywhere, spaces and quotes, modules in the user's order, the
    advice's staging commands and many similar runs: the job gets what the user meant."""
    if data["environment"] == "none":
        data["environment_path"] = ""
    composed, form = _composed(data)
    runs = int(data["similar_runs"])
    if composed is None and runs > 1:  # runs of a chain each: refused, with what to do instead
        assert "does not yet chain the runs of a sweep" in str(form.errors["hours"]), form.errors
        return
    assert composed is not None, form.errors  # every drawn value is one a user may write
    rec, script = composed.recommendation, composed.script
    env = PROCESSING_ENV if data["cluster"] == "processing" else FEDERATION_ENV
    wanted = {"DATA_SOURCE": data["data_path"], "RESULTS_DEST": data["results_dir"]}
    if data["environment"] == "venv":
        wanted["VENV"] = data["environment_path"]
    got = _values(script, env, [*wanted, "CHECKPOINT_DIR"])
    # processing's $SCRATCH is the script's own fallback, not the job's: expand it the same way.
    site = dict(rec.cluster.environment.variables)
    env = env | {k: _expanded(v, env) for k, v in site.items() if v and k not in env}
    for name, path in wanted.items():
        assert got[name] == _expanded(path, env), (name, path)
    # Checkpoints where the site's documents put them (scratch on the federation, by job name so
    # that every part of a chain finds them), else with the results.
    folder = rec.cluster.policy.checkpoint_dir
    expected = f"{_expanded(folder, env)}/reach" if folder else f"{got['RESULTS_DEST']}/checkpoints"
    assert got["CHECKPOINT_DIR"] == expected

    if data["modules"]:
        assert f"module load {data['modules']}\n" in script
    for step in (*rec.storage.staging, rec.storage.copy_back):
        if step is not None:
            for line in step.command.splitlines():
                assert line.strip() in script, (step.action, line)
    if runs > 1:  # each run its own (tests/test_sweep_invariants.py says how)
        assert _directive(script, "array") == f"1-{runs}"
        assert [run.folder for run in runs_in(script)] == [f"run-{n:03d}" for n in range(1, 4)]


@pytest.mark.django_db
@settings(
    max_examples=max(1, EXAMPLES // 5),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    data=st.fixed_dictionaries(
        {
            "cluster": st.just("dgx"),
            "workload": st.sampled_from(["training", "inference", "debugging"]),
            "dataset_gb": st.sampled_from(["0.5", "20", "300"]),
            "file_count": st.sampled_from(["", "200000"]),
            "gpu_type": st.sampled_from(["", "a100"]),
            "gpu_count": st.sampled_from(["1", "2", "8", "16"]),
            "hours": st.sampled_from(["1", "30", "200"]),
            "nodes": st.sampled_from(["1", "2"]),
            "similar_runs": st.sampled_from(["1", "5"]),
            "job_name": st.just("dgx-run"),
            "command": st.just("python train.py"),
        },
        optional={"checkpointing": st.just("on"), "multi_gpu": st.just("on")},
    )
)
def test_a_cluster_without_slurm_gets_advice_and_no_script(seeded, data):
    """Without any of the fields only a Slurm script needs (as the page hides them)."""
    form = ComposeForm(data)
    composed = compose(form)
    assert not any(name in form.errors for name in SLURM_ONLY), form.errors
    rec = composed.recommendation if composed else None
    if rec is None or rec.choice is None:  # refused (200 h with no checkpoints): on a field shown
        assert form.errors, data
        return
    assert not (composed.script or "").strip()
    assert rec.choice.gpu_type.name in {g.name for g in rec.cluster.gpu_types}
    assert any(note.code == "guidance_only" for note in rec.warnings)


def _as_json(data: dict) -> dict:
    """The form's fields as an API client sends them: numbers, lists and booleans."""
    job = {k: v for k, v in data.items() if v != ""}
    for name in ("dataset_gb", "hours"):
        job[name] = float(job[name])
    for name in ("gpu_count", "nodes", "similar_runs", "file_count", "cpus_per_task"):
        if name in job:
            job[name] = int(job[name])
    for name in ("checkpointing", "multi_gpu"):
        job[name] = job.get(name) == "on"
    job["modules"] = data["modules"].split()
    return job


@pytest.mark.django_db
@settings(
    max_examples=max(1, EXAMPLES // 10),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=FORMS)
def test_the_api_composes_what_the_page_composes(seeded, data):
    """POST /api/v1/script with the same job gives the page's script byte for byte, or both refuse
    it on the same field."""
    user, _ = User.objects.get_or_create(username="invariants")
    page_client, api_client = Client(), Client()
    page_client.force_login(user)
    secret = ApiToken.issue(user, f"t{ApiToken.objects.count()}")[1]
    page = page_client.post("/jobs/new/", data | {"download": "1"})
    api = api_client.post(
        "/api/v1/script",
        _as_json(data),
        content_type="application/json",
        headers={"Authorization": f"Bearer {secret}"},
    )
    downloaded = "attachment" in page.get("Content-Disposition", "")
    if api.status_code == 200:
        assert downloaded, (data, api.json()["script"][:200])
        assert page.content.decode() == api.json()["script"]
    else:
        assert api.status_code == 422, api.content
        assert not downloaded
        fields = {e["field"] for e in api.json()["detail"]}
        form = ComposeForm(data)
        compose(form)
        assert fields & (set(form.errors) | {"__all__"}), (fields, form.errors)
