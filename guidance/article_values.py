"""The numbers an article quotes, filled in from the published guidance each time it is shown,
so that an admin's change to a policy reaches the articles that cite it.

An article writes `{{ policy.node_local_limit_gb }}`, `{{ gpu.a100.memory_gb }}` or
`{{ partition.<name>.max_hours }}`. Only these names are looked up: nothing in an article is
run as template code, and a name that is not known shows as a marked error, never a failure.
"""

import re
from collections.abc import Callable, Iterable

from guidance import models

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z0-9_.\-]+)\s*\}\}")

POLICY_FIELDS = (
    "in_memory_limit_gb",
    "node_local_limit_gb",
    "checkpoint_chunk_hours",
    "cpus_per_gpu",
    "memory_per_gpu_mb",
    "utilization_target_percent",
    "many_files_threshold",
    "small_file_kb",
)
GPU_FIELDS = ("memory_gb",)
PARTITION_FIELDS = (
    "max_hours",
    "default_hours",
    "gpus_per_node",
    "cpus_per_node",
    "memory_per_node_mb",
)


def cluster_values(cluster: models.Cluster) -> dict[str, float]:
    """Every placeholder's value for one cluster (from its prefetched facts where it has them)."""
    values: dict[str, float] = {}
    policy = getattr(cluster, "policy", None)
    if policy is not None:
        values |= {f"policy.{name}": getattr(policy, name) for name in POLICY_FIELDS}
    for gpu in cluster.gpu_types.all():
        values |= {f"gpu.{gpu.name}.{name}": getattr(gpu, name) for name in GPU_FIELDS}
    for part in cluster.partitions.all():
        prefix = f"partition.{part.name}"
        values |= {f"{prefix}.{name}": getattr(part, name) for name in PARTITION_FIELDS}
    return values


def shown_values(clusters: Iterable[models.Cluster]) -> dict[str, str]:
    """The values as an article shows them: one cluster's, or for an article about every cluster
    the value they share, else their range ("6 to 16" written with a dash)."""
    found: dict[str, set[float]] = {}
    for cluster in clusters:
        for name, value in cluster_values(cluster).items():
            found.setdefault(name, set()).add(value)
    return {
        name: _number(min(v)) if len(v) == 1 else f"{_number(min(v))}\N{EN DASH}{_number(max(v))}"
        for name, v in found.items()
    }


def fill(text: str, values: dict[str, str], unknown: Callable[[str], str]) -> str:
    return PLACEHOLDER.sub(lambda m: values.get(m[1]) or unknown(m[1]), text)


def help_text() -> str:
    """For the admin: the placeholders an article may use."""
    policy = ", ".join(f"{{{{ policy.{name} }}}}" for name in POLICY_FIELDS)
    partition = ", ".join(PARTITION_FIELDS)
    return (
        "Markdown; unsafe HTML is removed when shown. Numbers the guidance publishes are "
        "written as placeholders and shown with the current values of the cluster the article "
        f"is read on (on the clusters' list: shared by all, or their range). Policy: {policy}. "
        "A GPU type's memory: {{ gpu.NAME.memory_gb }}. A node type: "
        f"{{{{ partition.NAME.FIELD }}}} with FIELD one of {partition}. "
        "An unknown name is shown marked in red."
    )


def _number(value: float) -> str:
    """1000 -> "1,000", 0.5 -> "0.5", 24.0 -> "24"."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")
