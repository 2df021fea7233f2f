"""Each GPU's share of its node: the CPUs and memory a job asks for with each GPU it takes.

A cluster publishes one ratio per GPU, but its node types differ: Graham's v100 nodes have 28
CPUs for 8 GPUs, far fewer than the 16 per GPU of its p100 nodes. A job that took the ratio
there would hold the whole node for a few of its GPUs. So the share is the cluster's ratio, or
the node type's own split where that is clearly smaller, each with the source that states it:
the policy's own source for each figure of the ratio, the partition's for a node's split.
CPUs also follow a node's split where it is clearly larger (Cedar's v100l nodes: 32 CPUs for 4
GPUs, 8 each, where the ratio says 6): those CPUs are the GPU's, and nobody else can use them;
but only where the node's hardware is published, not the portal's placeholders for it.
Memory stays the documents' figure unless the node has clearly less: the documents' ratios are
round figures a little over some nodes' exact split (Cedar's 32000M for 31250M), kept as written.
"""

from dataclasses import dataclass

from guidance.engine.sources import PORTAL_PLACEHOLDERS, Source
from guidance.engine.types import Cluster, Partition

# A ratio within this of the node's split is the same share, rounded (32G and 32000M, too).
SHARE_TOLERANCE = 1.1


@dataclass(frozen=True)
class GpuShare:
    cpus: int
    memory_mb: int
    cpus_reason: str
    memory_reason: str
    cpus_source: Source | None
    memory_source: Source | None


def gpu_share(cluster: Cluster, partition: Partition) -> GpuShare:
    policy = cluster.policy
    gpus = max(partition.gpus_per_node, 1)
    node_cpus, node_memory = partition.cpus_per_node // gpus, partition.memory_per_node_mb // gpus
    node = f"{partition.name} nodes on {cluster.name} have"
    if node_cpus * SHARE_TOLERANCE < policy.cpus_per_gpu:
        cpus = max(node_cpus, 1)
        cpus_reason = (
            f"{cpus} CPUs per GPU: {node} {partition.cpus_per_node} CPUs for {gpus} GPUs, "
            f"fewer than {cluster.name}'s {policy.cpus_per_gpu} per GPU elsewhere."
        )
        cpus_source = partition.source
    elif (
        node_cpus > policy.cpus_per_gpu * SHARE_TOLERANCE
        and partition.source != PORTAL_PLACEHOLDERS
    ):
        cpus = node_cpus
        cpus_reason = (
            f"{cpus} CPUs per GPU: {node} {partition.cpus_per_node} CPUs for {gpus} GPUs, "
            f"more than {cluster.name}'s {policy.cpus_per_gpu} per GPU: each GPU's own CPUs, "
            "to keep it fed."
        )
        cpus_source = partition.source
    else:
        cpus = policy.cpus_per_gpu
        cpus_reason = (
            f"{cpus} CPUs per GPU, {cluster.name}'s ratio: enough DataLoader workers to keep "
            "each GPU fed."
        )
        cpus_source = policy.cpus_source
    if node_memory * SHARE_TOLERANCE < policy.memory_per_gpu_mb:
        memory = node_memory
        memory_reason = f"{memory}M per GPU: {node} {partition.memory_per_node_mb}M for {gpus} GPUs"
        memory_source = partition.source
    else:
        memory = policy.memory_per_gpu_mb
        memory_reason = f"{memory}M per GPU on {cluster.name}"
        memory_source = policy.memory_source
    return GpuShare(cpus, memory, cpus_reason, memory_reason, cpus_source, memory_source)
