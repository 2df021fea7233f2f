"""Which node type and GPU: the processing cluster's rules (000) and the general ones."""

import pytest

from guidance.engine import Workload, sources
from tests.engine_helpers import advise, codes, note


@pytest.mark.parametrize(
    ("fields", "partition", "source"),
    [
        # A6000/A100 only at near-100% utilization, otherwise RTX.
        ({}, "rtx", sources.PROCESSING_TRAINING),
        ({"gpu_mem_gb": 24}, "rtx", sources.PROCESSING_TRAINING),
        ({"expects_full_utilization": True}, "a100", sources.PROCESSING_TRAINING),
        ({"expects_full_utilization": True, "gpu_mem_gb": 60}, "a100", sources.PROCESSING_TRAINING),
        # Debugging that needs ~48 GB goes to roentgen.
        (
            {"workload": Workload.DEBUGGING, "gpu_mem_gb": 48},
            "roentgen",
            sources.PROCESSING_TRAINING,
        ),
        (
            {"workload": Workload.DEBUGGING, "gpu_mem_gb": 40},
            "roentgen",
            sources.PROCESSING_TRAINING,
        ),
        # Inference under 11 GB on 2080ti; above it, RTX.
        ({"workload": Workload.INFERENCE, "gpu_mem_gb": 8}, "2080ti", sources.PROCESSING_INFERENCE),
        (
            {"workload": Workload.INFERENCE, "gpu_mem_gb": 11},
            "2080ti",
            sources.PROCESSING_INFERENCE,
        ),
        ({"workload": Workload.INFERENCE, "gpu_mem_gb": 11.5}, "rtx", sources.PROCESSING_TRAINING),
    ],
)
def test_it_follows_the_processing_clusters_gpu_rules(fields, partition, source):
    rec = advise("processing", **fields)
    assert rec.ok, rec.errors
    assert rec.choice.partition.name == partition
    assert rec.choice.source == source


def test_a_job_that_needs_big_cards_but_not_full_use_gets_them_with_a_warning():
    rec = advise("processing", gpu_mem_gb=40)
    assert rec.choice.partition.name == "a6000"  # roentgen is set aside for debugging
    warning = note(rec.warnings, "full_utilization_expected")
    assert "rtx" in warning.message
    assert warning.source == sources.PROCESSING_TRAINING


def test_asking_for_an_a100_without_full_use_is_warned():
    rec = advise("processing", gpu_type="A100")
    assert rec.choice.partition.name == "a100"
    assert "full_utilization_expected" in codes(rec.warnings)
    assert "full_utilization_expected" not in codes(
        advise("processing", gpu_type="a100", expects_full_utilization=True).warnings
    )


def test_it_explains_why_not_the_other_node_types():
    rec = advise("processing")
    why = {alt.partition.name: alt.why for alt in rec.choice.alternatives}
    assert set(why) == {"a100", "a6000", "roentgen", "2080ti"}
    assert "set aside for debugging" in why["roentgen"]
    assert "set aside for inference" in why["2080ti"]
    assert "near 100% busy" in why["a100"]


def test_it_rejects_node_types_whose_gpus_are_too_small():
    rec = advise("processing", gpu_mem_gb=30)
    why = {alt.partition.name: alt.why for alt in rec.choice.alternatives}
    assert "less than the 30 GB needed" in why["rtx"]


def test_an_unknown_gpu_type_is_an_error_that_lists_the_known_ones():
    rec = advise("processing", gpu_type="h100")
    assert not rec.ok
    error = note(rec.errors, "unknown_gpu_type")
    assert error.field == "gpu_type"
    assert "a100, a6000, rtx, roentgen, 2080ti" in error.message


def test_gpu_memory_above_every_gpu_type_is_an_error():
    rec = advise("beluga", gpu_mem_gb=32)
    error = note(rec.errors, "gpu_memory_unavailable")
    assert error.field == "gpu_mem_gb"
    assert "the largest, v100, has 16 GB" in error.message
    assert advise("beluga", gpu_mem_gb=16).ok


def test_a_chosen_type_too_small_for_the_memory_is_an_error():
    rec = advise("processing", gpu_type="2080ti", gpu_mem_gb=20)
    assert "gpu_type_too_small" in codes(rec.errors)


def test_it_needs_enough_gpus_per_node():
    rec = advise("graham", multi_gpu=True, gpu_count=4)
    assert rec.choice.partition.name in {"v100", "t4"}  # p100 nodes have 2 GPUs
    rec = advise("graham", multi_gpu=True, gpu_count=16)
    assert "no_partition_fits" in codes(rec.errors)
    assert advise("graham", multi_gpu=True, gpu_count=16, nodes=2).ok


def test_federation_clusters_pick_the_smallest_card_that_fits():
    assert advise("cedar").choice.partition.name == "p100"
    assert advise("cedar", gpu_mem_gb=14).choice.partition.name == "p100l"
    assert advise("cedar", gpu_mem_gb=20).choice.partition.name == "v100l"
