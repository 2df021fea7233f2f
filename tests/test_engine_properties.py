"""Whatever a user types, the engine answers with errors or a complete, sourced, feasible plan."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from guidance.engine import JobSpec, Placement, TierKind, Workload, recommend
from guidance.seed import CLUSTERS

specs = st.builds(
    JobSpec,
    workload=st.sampled_from(Workload),
    dataset_gb=st.floats(-10, 5000, allow_nan=False),
    hours=st.floats(-5, 1500, allow_nan=False),
    file_count=st.integers(-5, 3_000_000),
    data_location=st.none() | st.sampled_from(TierKind),
    gpu_type=st.none() | st.sampled_from(["a100", "rtx", "v100", "p100", "t4", "2080ti", "h100"]),
    gpu_count=st.integers(0, 20),
    gpu_mem_gb=st.none() | st.floats(0, 100, allow_nan=False),
    checkpointing=st.booleans(),
    multi_gpu=st.booleans(),
    nodes=st.integers(0, 4),
    expects_full_utilization=st.booleans(),
    similar_runs=st.integers(0, 50),
)
clusters = st.sampled_from([c.facts for c in CLUSTERS])


def _plausible_spec(cluster):
    # Values a user may well type: mostly valid, so that most answers are plans to check.
    return st.builds(
        JobSpec,
        workload=st.sampled_from(Workload),
        dataset_gb=st.floats(0, 2000, allow_nan=False),
        hours=st.floats(0.1, 1000, allow_nan=False),
        file_count=st.integers(0, 2_000_000),
        data_location=st.none() | st.sampled_from([TierKind.PROJECT, TierKind.SCRATCH]),
        gpu_type=st.none() | st.sampled_from([g.name for g in cluster.gpu_types]),
        gpu_count=st.integers(1, 16),
        gpu_mem_gb=st.none() | st.floats(1, 80, allow_nan=False),
        checkpointing=st.booleans(),
        multi_gpu=st.booleans(),
        nodes=st.integers(1, 3),
        expects_full_utilization=st.booleans(),
        similar_runs=st.integers(1, 50),
    )


plausible = clusters.flatmap(lambda c: st.tuples(_plausible_spec(c), st.just(c)))


def _sourced_items(rec):
    yield rec.storage
    yield from rec.storage.staging
    yield from filter(None, [rec.storage.copy_back, rec.storage.cleanup, rec.chain])
    yield rec.choice
    yield from rec.choice.alternatives
    r = rec.resources
    yield from [r.nodes, r.gpus_per_node, r.tasks_per_node, r.cpus_per_task, r.memory_mb, r.minutes]
    yield from rec.warnings
    yield from rec.tips


@settings(max_examples=400, deadline=None)
@given(spec=specs | plausible.map(lambda case: case[0]), cluster=clusters)
def test_every_answer_is_errors_or_a_complete_sourced_plan(spec, cluster):
    rec = recommend(spec, cluster)
    if not rec.ok:
        assert rec.storage is None and rec.resources is None
        assert all(e.message for e in rec.errors)
        return
    for item in _sourced_items(rec):
        assert item.source is not None, item
        assert getattr(item, "reason", None) or getattr(item, "why", None) or item.message


@settings(max_examples=400, deadline=None)
@given(case=plausible)
def test_a_plan_fits_its_node_type_and_covers_the_duration(case):
    spec, cluster = case
    rec = recommend(spec, cluster)
    if not rec.ok:
        return
    partition, r = rec.choice.partition, rec.resources
    assert r.gpus_per_node.value * r.nodes.value >= 1
    assert r.gpus_per_node.value <= partition.gpus_per_node
    assert r.cpus_per_task.value <= partition.cpus_per_node
    assert r.memory_mb.value <= partition.memory_per_node_mb
    assert r.minutes.value <= math.ceil(partition.max_hours * 60)
    jobs = rec.chain.jobs if rec.chain else 1
    assert jobs * r.minutes.value >= spec.hours * 60 - 1e-6
    if spec.gpu_mem_gb:
        assert rec.choice.gpu_type.memory_gb >= spec.gpu_mem_gb
    policy = cluster.policy
    if rec.storage.placement == Placement.MEMORY:
        assert spec.dataset_gb <= policy.in_memory_limit_gb
    elif rec.storage.placement == Placement.NODE_LOCAL:
        # Within the generic limit, unless the site stages its data whatever its size (000).
        assert policy.stages_training_data or spec.dataset_gb <= policy.node_local_limit_gb
    elif spec.workload == Workload.TRAINING and cluster.tier(TierKind.NODE_LOCAL):
        assert spec.dataset_gb > policy.node_local_limit_gb  # training stays off the network
