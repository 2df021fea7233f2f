"""Input checks that stop the engine before it advises on a job that cannot exist."""

import math

from guidance.engine import sources
from guidance.engine.notes import Notes, describe_bytes, describe_gb, describe_hours
from guidance.engine.types import Cluster, JobSpec, TierKind

# Data has to live somewhere that outlives a job before a job can read it.
PERSISTENT_KINDS = (TierKind.HOME, TierKind.SCRATCH, TierKind.PROJECT, TierKind.NEARLINE)


# Beyond any cluster's storage: a larger figure is a slip of the keyboard (or of the unit).
MAX_DATASET_GB = 10_000_000  # 10 PB
MAX_FILES = 10_000_000_000


def validate(spec: JobSpec, cluster: Cluster, notes: Notes) -> None:
    _check_numbers(spec, notes)
    _check_size(spec, cluster, notes)
    if spec.data_location is not None and spec.data_location not in PERSISTENT_KINDS:
        notes.error(
            "data_location_not_persistent",
            "Data has to live on storage that outlives a job (home, scratch, project or nearline) "
            "before a job can stage it.",
            sources.STORAGE_AREAS,
            "data_location",
        )
    if not cluster.partitions:
        notes.error(
            "no_partitions",
            f"{cluster.name} has no GPU node types published yet: ask its admins to add them.",
        )
        return
    _check_gpu(spec, cluster, notes)
    _check_spread(spec, notes)
    _check_duration(spec, cluster, notes)


def _check_numbers(spec: JobSpec, notes: Notes) -> None:
    if spec.dataset_gb < 0:
        notes.error("negative", "The dataset size cannot be negative.", field="dataset_gb")
    if spec.hours <= 0:
        notes.error("not_positive", "The duration must be more than zero hours.", field="hours")
    if spec.file_count < 0:
        notes.error("negative", "The number of files cannot be negative.", field="file_count")
    if spec.gpu_count < 1:
        notes.error("not_positive", "Ask for at least one GPU.", field="gpu_count")
    if spec.nodes < 1:
        notes.error("not_positive", "Ask for at least one node.", field="nodes")
    if spec.gpu_mem_gb is not None and spec.gpu_mem_gb <= 0:
        notes.error(
            "not_positive",
            "The GPU memory needed must be more than zero GB (leave it empty if unknown).",
            field="gpu_mem_gb",
        )
    if spec.similar_runs < 1:
        notes.error(
            "not_positive", "The number of similar runs is at least one.", field="similar_runs"
        )


def _check_size(spec: JobSpec, cluster: Cluster, notes: Notes) -> None:
    """A dataset no storage of the cluster could hold cannot be read by its jobs either."""
    if not spec.dataset_gb <= MAX_DATASET_GB:  # also NaN, which no comparison holds
        notes.error(
            "dataset_too_large",
            f"{spec.dataset_gb:g} GB is more than {describe_gb(MAX_DATASET_GB)} (10 PB), more "
            "than any cluster's storage: check the size and its unit (GB).",
            field="dataset_gb",
        )
        return
    if spec.file_count > MAX_FILES:
        notes.error(
            "too_many_files",
            f"{spec.file_count:,} files are more than any file system holds: check the number.",
            field="file_count",
        )
    tiers = [t for t in cluster.storage_tiers if t.kind in PERSISTENT_KINDS]
    if not tiers or any(not t.quota_bytes for t in tiers):
        return  # some storage has no published quota: it may hold it
    largest = max(tiers, key=lambda t: t.quota_bytes or 0)
    if spec.dataset_gb * 1000**3 > largest.quota_bytes:
        notes.error(
            "dataset_over_every_quota",
            f"{describe_gb(spec.dataset_gb)} is more than any storage on {cluster.name} holds: "
            f"the largest quota is {largest.name}'s, {describe_bytes(largest.quota_bytes)}. "
            "Check the size, or ask the site for more space first.",
            largest.source or sources.STORAGE_AREAS,
            "dataset_gb",
        )


def _check_gpu(spec: JobSpec, cluster: Cluster, notes: Notes) -> None:
    offered = ", ".join(g.name for g in cluster.gpu_types)
    if spec.gpu_type:
        gpu = cluster.gpu_type(spec.gpu_type)
        if gpu is None:
            notes.error(
                "unknown_gpu_type",
                f"{cluster.name} has no GPU type '{spec.gpu_type}'. It offers: {offered}.",
                field="gpu_type",
            )
            return
        if spec.gpu_mem_gb and spec.gpu_mem_gb > gpu.memory_gb:
            notes.error(
                "gpu_type_too_small",
                f"A {gpu.name} has {describe_gb(gpu.memory_gb)} of memory, less than the "
                f"{describe_gb(spec.gpu_mem_gb)} the job needs.",
                gpu.source,
                "gpu_mem_gb",
            )
    largest = max(cluster.gpu_types, key=lambda g: g.memory_gb, default=None)
    if spec.gpu_mem_gb and largest and spec.gpu_mem_gb > largest.memory_gb:
        notes.error(
            "gpu_memory_unavailable",
            f"No GPU on {cluster.name} has {describe_gb(spec.gpu_mem_gb)} of memory: the largest, "
            f"{largest.name}, has {describe_gb(largest.memory_gb)}. Lower the batch size or "
            "model size, or shard the model over several GPUs.",
            largest.source,
            "gpu_mem_gb",
        )


def _check_spread(spec: JobSpec, notes: Notes) -> None:
    """GPUs over nodes: Slurm gives every node of a job the same GPUs (--gpus-per-node), so a
    count that does not divide by the nodes changes, which the user must hear about."""
    if not spec.multi_gpu or spec.nodes <= 1 or spec.gpu_count < 1:
        return
    per_node = math.ceil(spec.gpu_count / spec.nodes)
    if spec.nodes > spec.gpu_count:
        notes.warn(
            "fewer_gpus_than_nodes",
            f"{spec.gpu_count} GPU{'s' if spec.gpu_count > 1 else ''} over {spec.nodes} nodes: "
            f"each node of the job needs at least one, so it asks for one per node, "
            f"{spec.nodes} in all. Ask for fewer nodes to keep to {spec.gpu_count}.",
            sources.SBATCH_OPTIONS,
            "gpu_count",
        )
        return
    if per_node * spec.nodes != spec.gpu_count:
        notes.warn(
            "gpus_rounded_to_nodes",
            f"{spec.gpu_count} GPUs over {spec.nodes} nodes: every node gets the same number, so "
            f"the job asks for {per_node} per node, {per_node * spec.nodes} in all. Ask for a "
            f"multiple of {spec.nodes} to get what you ask for.",
            sources.SBATCH_OPTIONS,
            "gpu_count",
        )


def _check_duration(spec: JobSpec, cluster: Cluster, notes: Notes) -> None:
    if spec.hours <= cluster.max_hours or spec.checkpointing:
        return
    notes.error(
        "over_max_duration",
        f"{describe_hours(spec.hours)} is over {cluster.name}'s maximum job duration of "
        f"{describe_hours(cluster.max_hours)}. Make the program resume from its latest "
        "checkpoint, and the portal will split the work into a chain of shorter jobs.",
        cluster.max_hours_source,
        "hours",
    )
