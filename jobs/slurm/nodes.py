"""A cluster's partitions (scontrol) and nodes (sinfo), and the GPU partitions the portal imports
from them."""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from jobs.slurm.values import (
    Gres,
    SlurmParseError,
    duration_hours,
    expand_hostlist,
    parse_gres,
    parse_tres,
    read_rows,
)

PARTITIONS_ARGV = ["scontrol", "--oneliner", "show", "partition"]
SINFO_NODES_FORMAT = "%N|%P|%c|%m|%G"
NODES_ARGV = ["sinfo", "--Node", "--noheader", f"--format={SINFO_NODES_FORMAT}"]


@dataclass(frozen=True)
class PartitionFacts:
    name: str
    nodes: list[str]
    max_hours: float | None  # None: UNLIMITED
    default_hours: float | None  # None: the partition sets none (jobs get MaxTime)
    state: str  # UP, DOWN, DRAIN, INACTIVE
    is_default: bool
    total_cpus: int | None
    total_nodes: int | None
    tres: dict[str, str]  # cpu, mem, node, billing, gres/gpu: the partition's whole capacity
    fields: dict[str, str]  # everything scontrol printed, for what is not read above


def parse_partitions(text: str) -> list[PartitionFacts]:
    """`scontrol show partition -o`: one line per partition of `Key=Value` words."""
    partitions = []
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = dict(_key_values(line))
        if "PartitionName" not in fields:
            raise SlurmParseError(f"not a partition line: {line!r}")
        partitions.append(
            PartitionFacts(
                name=fields["PartitionName"],
                nodes=expand_hostlist(fields.get("Nodes", "")),
                max_hours=duration_hours(fields.get("MaxTime", "UNLIMITED")),
                default_hours=duration_hours(fields.get("DefaultTime", "NONE")),
                state=fields.get("State", ""),
                is_default=fields.get("Default") == "YES",
                total_cpus=_int_or_none(fields.get("TotalCPUs", "")),
                total_nodes=_int_or_none(fields.get("TotalNodes", "")),
                tres=parse_tres(fields.get("TRES", "")),
                fields=fields,
            )
        )
    return partitions


def _key_values(line: str) -> Iterator[tuple[str, str]]:
    for word in line.split():
        key, sep, value = word.partition("=")
        if not sep:
            raise SlurmParseError(f"not a Key=Value word: {word!r} in {line!r}")
        yield key, value


def _int_or_none(text: str) -> int | None:
    return int(text) if text.isdigit() else None


@dataclass(frozen=True)
class NodeFacts:
    name: str
    partitions: tuple[str, ...]
    cpus: int
    memory_mb: int
    gres: tuple[Gres, ...]

    @property
    def gpus(self) -> tuple[Gres, ...]:
        return tuple(gres for gres in self.gres if gres.name == "gpu")


def parse_nodes(text: str) -> list[NodeFacts]:
    """`sinfo -N -h -o "%N|%P|%c|%m|%G"`: a line per node and partition, merged per node.

    The default partition carries a `*` (`gpu-a100*`); it is dropped here.
    """
    nodes: dict[str, NodeFacts] = {}
    for row in read_rows(text, ("name", "partition", "cpus", "memory", "gres")):
        name, partition = row["name"].strip(), row["partition"].strip().rstrip("*")
        known = nodes.get(name)
        if known:
            nodes[name] = NodeFacts(
                name, (*known.partitions, partition), known.cpus, known.memory_mb, known.gres
            )
            continue
        nodes[name] = NodeFacts(
            name=name,
            partitions=(partition,),
            cpus=int(row["cpus"]),
            memory_mb=int(row["memory"]),
            gres=parse_gres(row["gres"]),
        )
    return list(nodes.values())


@dataclass(frozen=True)
class GpuPartition:
    """What the portal's Partition model needs, from the partition and its nodes."""

    name: str
    gpu_type: str
    gpus_per_node: int
    cpus_per_node: int
    memory_per_node_mb: int
    node_count: int
    max_hours: float | None
    default_hours: float | None


def gpu_partitions(
    partitions: Iterable[PartitionFacts], nodes: Iterable[NodeFacts]
) -> list[GpuPartition]:
    """One entry per partition and GPU type; a node's smallest size stands for the partition.

    Partitions without GPUs are left out; one with two GPU types gives two entries.
    """
    nodes_by_name = {node.name: node for node in nodes}
    result = []
    for partition in partitions:
        members = [nodes_by_name[name] for name in partition.nodes if name in nodes_by_name]
        by_type: dict[str, list[tuple[NodeFacts, int]]] = {}
        for node in members:
            for gres in node.gpus:
                by_type.setdefault(gres.type, []).append((node, gres.count))
        for gpu_type, typed in sorted(by_type.items()):
            result.append(
                GpuPartition(
                    name=partition.name,
                    gpu_type=gpu_type,
                    gpus_per_node=min(count for _, count in typed),
                    cpus_per_node=min(node.cpus for node, _ in typed),
                    memory_per_node_mb=min(node.memory_mb for node, _ in typed),
                    node_count=len(typed),
                    max_hours=partition.max_hours,
                    default_hours=partition.default_hours,
                )
            )
    return result
