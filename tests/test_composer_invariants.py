"""What must hold for every composition, on every cluster, whatever the user asks and sets by hand:
the chain covers the work, the request fits the node type and the shares the advice states (or the
user's own value, warned), every value the user gave is in the script or a warning says why not,
the script parses and the portal's own checker finds nothing wrong with it, and the advice and the
script say the same numbers. Hypothesis draws the compositions; a failing example it finds becomes
a plain test beside the rule it broke."""

import math
import os
import re
import subprocess

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from guidance.engine import Placement
from guidance.engine.script_check import check_script
from guidance.engine.script_check.findings import Severity
from guidance.engine.slurm_time import parse_seconds
from guidance.facts import cluster_facts
from guidance.seed import CLUSTERS as SEED
from jobs.compose.forms import ComposeForm
from jobs.compose.from_form import compose
from jobs.slurm.values import parse_memory_mb

SLURM_CLUSTERS = ["narval", "beluga", "cedar", "graham", "processing"]
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
    max_examples=int(os.environ.get("INVARIANT_EXAMPLES", "250")),
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
    cpu_share = _share(
        policy.cpus_per_gpu, partition.cpus_per_node, partition.gpus_per_node, more=True
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
    if not (data["time_limit"] or data["memory"] or data["cpus_per_task"]):
        facts = cluster_facts(form.cleaned_data["cluster"])
        findings = check_script(script, facts, "def-someone").notes
        serious = [(f.code, f.message) for f in findings if f.severity != Severity.ADVICE]
        assert serious == [], (data, script)
