"""Node type, time, memory and CPUs set by hand: beyond the node type's limits an error that names
the limit and its source, against the cluster's guidance a warning quoting the rule, and either
way the value the user set is what the job asks for."""

import pytest

from guidance.engine import Overrides, Workload, sources
from tests.engine_helpers import advise, codes, note


def _set(slug: str = "narval", **overrides):
    fields = {k: overrides.pop(k) for k in list(overrides) if k not in Overrides.__annotations__}
    return advise(slug, dataset_gb=50, overrides=Overrides(**overrides), **fields)


def test_nothing_set_by_hand_keeps_the_recommendation():
    rec = _set()
    assert rec.resources.cpus_per_task.recommended is None
    assert rec.resources.memory_mb.recommended is None
    assert rec.resources.minutes.recommended is None


def test_a_time_over_the_node_types_maximum_is_refused_with_the_limit():
    rec = _set(minutes=8 * 24 * 60)
    [error] = rec.errors
    assert error.code == "time_over_partition" and error.field == "time_limit"
    assert "a100 jobs on Narval may run 7 days at most" in error.message
    # Where Narval's limit is stated (004's list of sbatch elements), not its node table.
    assert error.source == sources.NOTES_SBATCH_ELEMENTS
    assert rec.resources is None  # no script for a job Slurm would refuse


def test_a_time_over_the_checkpoint_chunk_is_taken_with_the_rule_quoted():
    rec = _set(minutes=36 * 60, hours=30)
    assert rec.ok and rec.resources.time == "1-12:00:00"
    warning = note(rec.warnings, "time_over_chunk")
    assert "Narval asks for jobs of 24 h at most, resumed from checkpoints" in warning.message
    assert warning.source == sources.LONG_RUNNING and warning.field == "time_limit"
    assert rec.resources.minutes.recommended == 30 * 60
    assert "You set it; the portal recommends 30 h" in rec.resources.minutes.reason


def test_a_time_shorter_than_the_work_warns_that_slurm_stops_it():
    rec = _set(minutes=60, hours=2)
    assert rec.resources.time == "0-01:00:00"
    assert "shorter than the 2 h the job needs" in note(rec.warnings, "time_under_duration").message


def test_memory_over_the_per_gpu_guidance_is_taken_with_the_rule_quoted():
    rec = _set(memory_mb=200_000)
    assert rec.ok and rec.resources.mem == "200000M"
    warning = note(rec.warnings, "memory_over_guidance")
    assert "Narval asks for 124500M per GPU (124500M for this job)" in warning.message
    assert warning.field == "memory" and warning.source == sources.PUBLIC_HARDWARE


def test_memory_over_the_node_is_refused_with_what_the_node_has():
    rec = _set(memory_mb=600_000)
    [error] = rec.errors
    assert error.field == "memory"
    assert "a100 nodes have 498000M of memory" in error.message


def test_less_memory_than_recommended_is_no_warning():
    rec = _set(memory_mb=64_000)
    assert rec.resources.mem == "64000M" and "memory_over_guidance" not in codes(rec.warnings)


@pytest.mark.parametrize(
    ("cpus", "code"), [(24, "cpus_over_ratio"), (2, "cpus_under_ratio"), (12, None)]
)
def test_cpus_against_the_clusters_ratio_are_taken_with_a_warning(cpus, code):
    rec = _set(cpus_per_task=cpus)
    assert rec.ok and rec.resources.cpus_per_task.value == cpus
    found = codes(rec.warnings) & {"cpus_over_ratio", "cpus_under_ratio"}
    assert found == ({code} if code else set())
    if code:
        assert "Narval gives 12 CPUs per GPU" in note(rec.warnings, code).message


def test_cpus_over_the_node_are_refused():
    rec = _set(cpus_per_task=64)
    [error] = rec.errors
    assert error.field == "cpus_per_task" and "a100 nodes have 48 CPUs" in error.message


def test_the_dataloader_tip_follows_the_cpus_set_by_hand():
    rec = _set(cpus_per_task=4)
    assert "num_workers=4" in note(rec.tips, "dataloader").message


def test_a_node_type_chosen_by_hand_is_used_and_the_portals_choice_shown():
    rec = _set("processing", partition="a6000", workload=Workload.TRAINING)
    assert rec.choice.partition.name == "a6000"
    assert rec.choice.reason.startswith("You chose a6000.")
    [alternative] = rec.choice.alternatives
    assert alternative.why.startswith("the portal's choice")


def test_a_node_type_set_aside_for_other_work_warns_with_its_source():
    rec = _set("processing", partition="2080ti", workload=Workload.TRAINING)
    assert rec.choice.partition.name == "2080ti"
    warning = note(rec.warnings, "partition_set_aside")
    assert "sets 2080ti aside for inference" in warning.message
    assert warning.source == sources.PROCESSING_INFERENCE


def test_a_node_type_that_cannot_run_the_job_is_refused_with_why():
    rec = _set("processing", partition="rtx", gpu_type="a100")
    [error] = rec.errors
    assert error.field == "partition"
    assert "rtx cannot run this job: it has rtx GPUs, and you asked for a100" in error.message


def test_an_unknown_node_type_lists_the_clusters_own():
    rec = _set("processing", partition="h100")
    [error] = rec.errors
    assert error.code == "unknown_partition"
    assert "has no node type h100: choose one of a100, a6000, rtx" in error.message


@pytest.mark.parametrize(("hours", "limit_hours", "parts"), [(60, 12, 5), (30, 8, 4), (20, 6, 4)])
def test_a_time_limit_set_by_hand_lengthens_the_chain_to_cover_the_work(hours, limit_hours, parts):
    rec = _set(minutes=limit_hours * 60, hours=hours, checkpointing=True)
    assert rec.ok and rec.chain.jobs == parts
    assert rec.chain.jobs * rec.resources.minutes.value >= hours * 60
    assert "time_under_duration" not in codes(rec.warnings)


def test_a_longer_time_limit_by_hand_makes_fewer_longer_parts():
    rec = _set(minutes=48 * 60, hours=96, checkpointing=True)
    assert rec.chain.jobs == 2 and rec.resources.time == "2-00:00:00"
