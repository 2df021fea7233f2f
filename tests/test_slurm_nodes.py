"""Partitions (scontrol) and nodes (sinfo), and the GPU partitions the portal imports from them,
fed what a real Slurm 22.05 printed."""

import pytest

from jobs.slurm.nodes import (
    NODES_ARGV,
    PARTITIONS_ARGV,
    GpuPartition,
    gpu_partitions,
    parse_nodes,
    parse_partitions,
)
from jobs.slurm.values import Gres
from tests.slurm_captured import captured


def test_it_reads_partitions():
    assert PARTITIONS_ARGV == ["scontrol", "--oneliner", "show", "partition"]
    a100, rtx = parse_partitions(captured("scontrol_partitions.txt"))
    assert (a100.name, a100.nodes, a100.max_hours, a100.is_default, a100.state) == (
        "gpu-a100",
        ["a100-1", "a100-2"],
        1.0,
        True,
        "UP",
    )
    assert a100.default_hours == pytest.approx(10 / 60)
    assert (a100.total_cpus, a100.total_nodes) == (8, 2)
    assert a100.tres["gres/gpu:a100"] == "4"
    assert a100.fields["DefMemPerNode"] == "UNLIMITED"
    assert (rtx.name, rtx.nodes, rtx.max_hours, rtx.is_default) == (
        "gpu-rtx",
        ["rtx-1"],
        0.5,
        False,
    )


def test_an_unlimited_partition_has_no_max_hours():
    [partition] = parse_partitions("PartitionName=long Nodes=n[01-02] MaxTime=UNLIMITED State=UP")
    assert (partition.max_hours, partition.default_hours) == (None, None)
    assert partition.nodes == ["n01", "n02"]


def test_it_reads_nodes():
    assert NODES_ARGV[-1] == "--format=%N|%P|%c|%m|%G"
    nodes = parse_nodes(captured("sinfo_nodes.txt"))
    assert [(node.name, node.partitions, node.cpus, node.memory_mb) for node in nodes] == [
        ("a100-1", ("gpu-a100",), 4, 8000),
        ("a100-2", ("gpu-a100",), 4, 8000),
        ("rtx-1", ("gpu-rtx",), 4, 8000),
    ]
    assert nodes[0].gpus == (Gres("gpu", "a100", 2),)


def test_a_node_in_two_partitions_is_one_node():
    nodes = parse_nodes("n1|gpu*|64|512000|gpu:h100:4(S:0-1)\nn1|long|64|512000|gpu:h100:4(S:0-1)")
    assert [(node.name, node.partitions) for node in nodes] == [("n1", ("gpu", "long"))]


def test_it_derives_gpu_partitions_for_the_portal():
    partitions = parse_partitions(captured("scontrol_partitions.txt"))
    nodes = parse_nodes(captured("sinfo_nodes.txt"))
    assert gpu_partitions(partitions, nodes) == [
        GpuPartition("gpu-a100", "a100", 2, 4, 8000, 2, 1.0, pytest.approx(1 / 6)),
        GpuPartition("gpu-rtx", "rtx", 2, 4, 8000, 1, 0.5, pytest.approx(1 / 6)),
    ]


def test_a_partition_without_gpus_is_left_out():
    partitions = parse_partitions("PartitionName=cpu Nodes=c1 MaxTime=1-00:00:00 State=UP")
    assert gpu_partitions(partitions, parse_nodes("c1|cpu|32|64000|(null)")) == []
