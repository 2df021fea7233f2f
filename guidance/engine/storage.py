"""Where the data should be while the job runs, how it gets there, and what happens after."""

from guidance.engine import data, sources
from guidance.engine.notes import Notes, describe_gb
from guidance.engine.sources import Source
from guidance.engine.types import (
    Cluster,
    DataKind,
    JobSpec,
    Placement,
    Step,
    StoragePlan,
    StorageTier,
    TierKind,
    Workload,
)

# Every generated script defines these: where the data is, where it is staged, where results go.
DATA_SOURCE = '"$DATA_SOURCE"'
STAGE_DIR = '"$STAGE_DIR"'
WORK_DIR = '"$WORK_DIR"'  # the job's own folder on node-local storage, holding STAGE_DIR
RESULTS_DIR = '"$RESULTS_DIR"'
RESULTS_DEST = '"$RESULTS_DEST"'
ON_EVERY_NODE = "srun --ntasks=$SLURM_NNODES --ntasks-per-node=1 "


CLEANUP_COMMAND = f"rm -rf {WORK_DIR}"
# On several nodes the script runs it on each (jobs/compose/script.py, its node keepers).
EVERY_NODE_CLEANS = (
    "Each node removes its own: the first after copying the results back, the others when the "
    "job ends, even cancelled or out of time."
)


def many_files(spec: JobSpec, cluster: Cluster) -> bool:
    return spec.file_count >= cluster.policy.many_files_threshold


def mean_file_kb(spec: JobSpec) -> float | None:
    return spec.dataset_gb * 1e6 / spec.file_count if spec.file_count else None


def small_files(spec: JobSpec, cluster: Cluster) -> bool:
    mean = mean_file_kb(spec)
    return mean is not None and mean < cluster.policy.small_file_kb


def should_archive(spec: JobSpec, cluster: Cluster) -> bool:
    """Many files, or small ones: move them as one archive (001, 002 step 2)."""
    return many_files(spec, cluster) or small_files(spec, cluster)


def data_kind(spec: JobSpec, archive: bool) -> DataKind:
    """What the user said the data is, else what its name says, else what the plan expects."""
    if spec.data_kind is not None:
        return spec.data_kind
    if spec.data_path.strip():
        return data.kind_from_name(spec.data_path.strip())
    return DataKind.ARCHIVE if archive else DataKind.FOLDER


def plan_storage(
    spec: JobSpec, cluster: Cluster, node_memory_mb: int, base_memory_mb: int, notes: Notes
) -> StoragePlan:
    """The plan for the job's data; `base_memory_mb` is what the job needs besides the data."""
    policy = cluster.policy
    archive = should_archive(spec, cluster)
    kind = data_kind(spec, archive)
    fits_in_memory = spec.dataset_gb <= policy.in_memory_limit_gb
    if fits_in_memory and base_memory_mb + gb_to_mb(spec.dataset_gb) > node_memory_mb:
        fits_in_memory = False
        notes.warn(
            "dataset_exceeds_node_memory",
            f"{describe_gb(spec.dataset_gb)} would fit the in-memory rule, but not beside the "
            "job's own memory on this node type: the data goes to node-local storage instead.",
            sources.DATASET_SIZE_TIERS,
            "dataset_gb",
        )
    fits_on_node = spec.dataset_gb <= policy.node_local_limit_gb
    node_local = cluster.tier(TierKind.NODE_LOCAL)
    results_tier = cluster.tier(TierKind.PROJECT, TierKind.SCRATCH, TierKind.HOME)

    if fits_in_memory:
        placement = Placement.MEMORY
        reason = (
            f"{describe_gb(spec.dataset_gb)} is at most {describe_gb(policy.in_memory_limit_gb)}: "
            "it fits in the job's memory. Stage it to node-local storage, load it once, and do "
            "not read from disk while the job computes."
        )
        source = sources.DATASET_SIZE_TIERS
    elif fits_on_node and node_local is not None and not _may_read_from_network(spec, archive):
        placement = Placement.NODE_LOCAL
        reason = (
            f"{describe_gb(spec.dataset_gb)} is more than "
            f"{describe_gb(policy.in_memory_limit_gb)} and at most "
            f"{describe_gb(policy.node_local_limit_gb)}: copy it to the node's local storage "
            f"({node_local.path}) when the job starts. It is orders of magnitude faster than "
            "shared storage."
        )
        source = _node_local_source(spec, node_local)
    else:
        placement = Placement.SHARED
        reason, source = _why_shared(spec, cluster, fits_on_node, node_local)

    _warn_about_where_data_lives(spec, cluster, kind, notes)
    if placement == Placement.SHARED:
        return StoragePlan(
            placement,
            cluster.tier(spec.data_location) if spec.data_location else results_tier,
            archive,
            reason,
            source,
            cleanup=_cleanup(spec, node_local, staged=False),
            results_tier=results_tier,
            data_kind=kind,
            work_tier=node_local,  # for a virtualenv built in the job, wherever the data is read
        )
    stage_tier = node_local or cluster.tier(TierKind.MEMORY)
    return StoragePlan(
        placement,
        stage_tier,
        archive,
        reason,
        source,
        staging=_staging(spec, stage_tier, kind),
        copy_back=_copy_back(stage_tier, results_tier),
        cleanup=_cleanup(spec, stage_tier, staged=stage_tier is not None),
        results_tier=results_tier,
        data_kind=kind,
        work_tier=stage_tier,
    )


def gb_to_mb(gb: float) -> int:
    return round(gb * 1000)


def _may_read_from_network(spec: JobSpec, archive: bool) -> bool:
    # 000: inference may read from network storage; many small files still must not stream.
    return spec.workload == Workload.INFERENCE and not archive


def _node_local_source(spec: JobSpec, node_local: StorageTier) -> Source:
    if spec.workload == Workload.TRAINING and node_local.source:
        return node_local.source
    return sources.DATASET_SIZE_TIERS


def _why_shared(
    spec: JobSpec, cluster: Cluster, fits_on_node: bool, node_local: StorageTier | None
) -> tuple[str, Source]:
    if fits_on_node and node_local is not None:  # inference, reading straight from the network
        return (
            "Inference may read its model and input directly from network storage: it moves "
            "little data compared with training.",
            sources.PROCESSING_INFERENCE,
        )
    if node_local is None:
        why = f"{cluster.name} publishes no node-local storage"
    else:
        why = (
            f"{describe_gb(spec.dataset_gb)} is more than "
            f"{describe_gb(cluster.policy.node_local_limit_gb)}, too large for {node_local.path}"
        )
    return (
        f"{why}: leave it on "
        "shared project storage and read it in large chunks (one large chunk every 10 seconds "
        "rather than 10 small chunks every second).",
        sources.DATASET_SIZE_TIERS,
    )


def _warn_about_where_data_lives(
    spec: JobSpec, cluster: Cluster, kind: DataKind, notes: Notes
) -> None:
    if spec.workload == Workload.TRAINING and spec.dataset_gb > cluster.policy.node_local_limit_gb:
        notes.warn(
            "training_from_network",
            "Training will read its data over the network, which is slow and loads the cluster "
            "for everybody. Train on a subset that fits node-local storage if you can, and read "
            "large sequential chunks (e.g. sharded archives).",
            sources.PROCESSING_TRAINING,
            "dataset_gb",
        )
    if many_files(spec, cluster):
        notes.warn(
            "many_small_files",
            f"{spec.file_count:,} files: keep the dataset as one archive (tar) on shared storage "
            "and extract it on the node. Streaming many files is slow, and every file counts "
            "against the file quota.",
            sources.SMALL_FILES,
            "file_count",
        )
    elif small_files(spec, cluster):
        notes.tip(
            "small_files",
            f"Its files average {mean_file_kb(spec):,.0f} kB: shared storage is built for large "
            "files, so keep the dataset as one tar archive and extract it on the node.",
            sources.ARCHIVE_DATASET,
            "file_count",
        )
    if should_archive(spec, cluster) and kind == DataKind.FOLDER and spec.data_path.strip():
        notes.tip(
            "archive_folder",
            "The job will copy this folder file by file, which is slow for many small files. "
            "Archive it once on a login node, then give the archive as the data path: "
            f"`{data.archive_command(spec.data_path.strip())}`. The job extracts it on the "
            "node with the same layout.",
            sources.ARCHIVE_DATASET,
            "data_path",
        )
    data_tier = cluster.tier(spec.data_location) if spec.data_location else None
    if data_tier and data_tier.quota_files and spec.file_count > data_tier.quota_files:
        notes.warn(
            "over_file_quota",
            f"{spec.file_count:,} files are more than {data_tier.name}'s quota of "
            f"{data_tier.quota_files:,} files: archive them before copying them there.",
            data_tier.source or sources.STORAGE_AREAS,
            "file_count",
        )
    if spec.data_location == TierKind.NEARLINE:
        notes.warn(
            "data_on_nearline",
            "Nearline storage is tape: jobs must not read from it. Recall the data to project "
            "storage before the job.",
            data_tier.source if data_tier and data_tier.source else sources.STORAGE_AREAS,
            "data_location",
        )


def _staging(spec: JobSpec, tier: StorageTier | None, kind: DataKind) -> tuple[Step, ...]:
    if tier is None:
        return ()
    prefix = ON_EVERY_NODE if spec.nodes > 1 else ""
    if spec.nodes > 1:
        why_nodes = "Each node has its own local storage: stage the data on every node."
        every_node = sources.MULTI_NODE_STAGING
    else:
        why_nodes, every_node = "", None
    copy_source = tier.source or sources.SINGLE_NODE_STAGING
    if kind == DataKind.ARCHIVE:
        action, source = "Extract the dataset archive on the node", sources.ARCHIVE_DATASET
        if data.is_zip(spec.data_path):
            command = f"{prefix}unzip -q {DATA_SOURCE} -d {STAGE_DIR}"
        else:  # tar runs the decompressor by itself (archives.py): the nodes need it installed
            command = f"{prefix}tar -xf {DATA_SOURCE} -C {STAGE_DIR}"
        why = "One archive copies in one stream and creates no files on shared storage."
    elif kind == DataKind.FILE:
        action, source = "Copy the data file to the node", copy_source
        command = f"{prefix}cp {DATA_SOURCE} {STAGE_DIR}/"
        why = f"Read it from {tier.path} while the job runs, not over the network."
    else:
        action, source = "Copy the dataset to the node", copy_source
        command = f"{prefix}rsync -a --info=progress2 {DATA_SOURCE}/ {STAGE_DIR}/"
        why = f"Read the data from {tier.path} while the job runs, not over the network."
    step = Step(
        action,
        # Two lines: under set -e, a failure on the left of && would not stop the job.
        f"{prefix}mkdir -p {STAGE_DIR}\n{command}",
        f"{why} {why_nodes}".strip(),
        every_node or source,
    )
    return (step,)


def _copy_back(stage: StorageTier | None, results: StorageTier | None) -> Step | None:
    if stage is None or results is None:
        return None
    if stage.per_job:
        why = f"{stage.path} is removed when the job ends: copy results to {results.name} first."
        source = sources.SINGLE_NODE_STAGING
    else:
        why = (
            f"{stage.path} may be wiped without warning: keep results and checkpoints in "
            f"{results.name}."
        )
        source = sources.PROCESSING_CLEANUP
    return Step(
        "Copy results back to persistent storage",
        # --update: an earlier part of a chain may have left newer files there.
        f"rsync -a --update {RESULTS_DIR}/ {RESULTS_DEST}/",
        why,
        source,
    )


def _cleanup(spec: JobSpec, tier: StorageTier | None, staged: bool) -> Step | None:
    """Removes the job's folder on the node, if it keeps one (for the staged data, or for a
    virtualenv built in the job) and the scheduler does not remove it."""
    if not (staged or spec.builds_environment):
        return None
    # Without a tier, or a path for it, the script keeps its folder in the node's own /tmp.
    if tier is not None and tier.path and tier.per_job:
        return None  # the scheduler removes a per-job directory itself
    on_every_node = f" {EVERY_NODE_CLEANS}" if spec.nodes > 1 else ""
    if staged and tier.path:
        return Step(
            "Remove the staged data when the job ends",
            CLEANUP_COMMAND,
            f"{tier.path} is shared by everybody's jobs on the node: clean up so it stays free."
            + on_every_node,
            sources.PROCESSING_CLEANUP,
        )
    return Step(
        "Remove the job's folder on the node",
        CLEANUP_COMMAND,
        "Other jobs need the space." + on_every_node,
        sources.PROCESSING_CLEANUP,
    )
