"""Reads a cluster's partitions and GPUs from Slurm itself into the guidance data, for admins to
annotate afterwards. Existing objects keep what admins wrote that Slurm does not know."""

from django.db import transaction

from guidance.models import Cluster, GpuType, Partition
from jobs.cluster import remote
from jobs.cluster.login import Login
from jobs.slurm.nodes import GpuPartition

# Slurm knows GPU types by name only; a new type starts from its card's usual memory.
KNOWN_MEMORY_GB = {
    "a100": 40, "h100": 80, "h200": 141, "a6000": 48, "l40s": 48, "v100": 16, "v100l": 32,
    "p100": 12, "p100l": 16, "t4": 16, "rtx": 24, "2080ti": 11,
}  # fmt: skip
UNKNOWN_MEMORY_GB = 16
NOTE = "Imported from Slurm (scontrol show partition, sinfo)."


def import_partitions(cluster: Cluster, login: Login) -> list[Partition]:
    return save_partitions(cluster, remote.read_partitions(login))


def save_partitions(cluster: Cluster, found_partitions: list[GpuPartition]) -> list[Partition]:
    imported = []
    with transaction.atomic():
        for found in found_partitions:
            gpu_type, _ = GpuType.objects.get_or_create(
                cluster=cluster,
                name=found.gpu_type,
                defaults={
                    "memory_gb": KNOWN_MEMORY_GB.get(found.gpu_type, UNKNOWN_MEMORY_GB),
                    "note": NOTE + " Memory is the card's usual size: check it.",
                },
            )
            max_hours = found.max_hours or 24 * 365
            partition, _ = Partition.objects.update_or_create(
                cluster=cluster,
                name=found.name,
                defaults={
                    "slurm_partition": found.name,
                    "gpu_type": gpu_type,
                    "gpus_per_node": found.gpus_per_node,
                    "cpus_per_node": found.cpus_per_node,
                    "memory_per_node_mb": found.memory_per_node_mb,
                    "node_count": found.node_count,
                    "max_hours": max_hours,
                    "default_hours": min(found.default_hours or 1, max_hours),
                    "note": NOTE,
                },
            )
            imported.append(partition)
    return imported
