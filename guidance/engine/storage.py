"""Where the data should be while the job runs, how it gets there, and what happens after."""

import math
import re

from guidance.engine import data, sources
from guidance.engine.notes import Notes, describe_bytes, describe_gb
from guidance.engine.shell import split_path
from guidance.engine.sources import Source
from guidance.engine.types import (
    CheckpointPlan,
    Cluster,
    DataKind,
    JobSpec,
    Partition,
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
GB = 1000**3
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


def data_kind(spec: JobSpec, archive: bool, shared: bool = False) -> DataKind:
    """What the user said the data is, else what its name says, else what the plan expects:
    shards when many small files stay on shared storage, one archive when they are staged."""
    if spec.data_kind is not None:
        return spec.data_kind
    if spec.data_path.strip():
        return data.kind_from_name(spec.data_path.strip())
    if archive:
        return DataKind.SHARDS if shared else DataKind.ARCHIVE
    return DataKind.FOLDER


def node_local_room(cluster: Cluster, partition: Partition) -> tuple[float, bool]:
    """(how many GB of node-local storage the job may fill, whether that is the node type's
    published size rather than the policy's generic limit)."""
    limit = cluster.policy.node_local_limit_gb
    published = partition.node_local_gb
    if published is not None and published > limit:
        return published, True
    return limit, False


def plan_storage(
    spec: JobSpec, cluster: Cluster, partition: Partition, base_memory_mb: int, notes: Notes
) -> StoragePlan:
    """The plan for the job's data; `base_memory_mb` is what the job needs besides the data."""
    policy = cluster.policy
    archive = should_archive(spec, cluster)
    fits_in_memory = spec.dataset_gb <= policy.in_memory_limit_gb
    if fits_in_memory and base_memory_mb + gb_to_mb(spec.dataset_gb) > partition.memory_per_node_mb:
        fits_in_memory = False
        notes.warn(
            "dataset_exceeds_node_memory",
            f"{describe_gb(spec.dataset_gb)} would fit the in-memory rule, but not beside the "
            "job's own memory on this node type: the data goes to node-local storage instead.",
            sources.DATASET_SIZE_TIERS,
            "dataset_gb",
        )
    room, node_type_room = node_local_room(cluster, partition)
    # Where the site stages its jobs' data whatever its size, only the node's own disk (where
    # published) limits it: the generic node-local limit is another site's rule.
    by_site_rule = policy.stages_training_data
    if by_site_rule:
        room, node_type_room = partition.node_local_gb or math.inf, False
    fits_on_node = spec.dataset_gb <= room
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
        if by_site_rule:
            reason = (
                f"{cluster.name}'s guidance copies the data a job works on to the node's local "
                f"storage ({node_local.path}) first, whatever its size: the job does so when it "
                "starts, and then reads nothing over the network. It must fit the node's disk, "
                "which other jobs share."
            )
            source = node_local.source or sources.DATASET_SIZE_TIERS
        elif node_type_room:
            reason = (
                f"{describe_gb(spec.dataset_gb)} is more than the "
                f"{describe_gb(policy.node_local_limit_gb)} that fits node-local storage in "
                f"general, but {partition.name} nodes have {describe_gb(room)} of it (published "
                f"for this node type): copy it to the node's local storage ({node_local.path}) "
                "when the job starts. It is orders of magnitude faster than shared storage."
            )
            source = partition.source or sources.DATASET_SIZE_TIERS
        else:
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
    shared = placement == Placement.SHARED
    kind = data_kind(spec, archive, shared)
    if shared:
        reason, source = _why_shared(spec, cluster, fits_on_node, node_local, room, archive, kind)
    elif node_local or cluster.tier(TierKind.MEMORY):
        reason += " " + _HOW_STAGED[kind]
    _warn_about_where_data_lives(spec, cluster, kind, fits_on_node, shared, notes)
    _check_quota(spec, cluster, results_tier if shared else None, notes)
    _check_results(spec, cluster, notes)
    if shared:
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
            checkpoints=checkpoint_plan(cluster),
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
        checkpoints=checkpoint_plan(cluster),
    )


# What the job does with each kind of data on the node, in the words of the plan's reason.
_HOW_STAGED = {
    DataKind.FOLDER: "The job copies the folder there.",
    DataKind.ARCHIVE: "The job extracts the archive there, in one stream.",
    DataKind.FILE: "The job copies the file there.",
    DataKind.SHARDS: "The job copies the shards there; the program reads each as a stream.",
}


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
    spec: JobSpec,
    cluster: Cluster,
    fits_on_node: bool,
    node_local: StorageTier | None,
    room: float,
    archive: bool,
    kind: DataKind,
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
            f"{describe_gb(spec.dataset_gb)} is more than {describe_gb(room)}, too large for "
            f"{node_local.path}"
        )
    if archive and kind == DataKind.FOLDER:
        return (
            f"{why}: it stays on shared project storage, and the job reads the folder in "
            "place. Opened one by one over the network, its many small files are slow: cut it "
            f"into shards (tar files of about {data.SHARD_GB} GB, see the tip), a few large "
            "files read in large sequential chunks.",
            sources.SMALL_FILES,
        )
    if archive:
        held = (
            f"shards (tar files of about {data.SHARD_GB} GB), and let the program read each"
            if kind == DataKind.SHARDS
            else "this one large archive, and let the program read it"
        )
        return (
            f"{why}: keep it on shared project storage as {held} from start to end as one "
            "stream: large sequential reads instead of opening many small files.",
            sources.SMALL_FILES,
        )
    return (
        f"{why}: leave it on "
        "shared project storage and read it in large chunks (one large chunk every 10 seconds "
        "rather than 10 small chunks every second).",
        sources.DATASET_SIZE_TIERS,
    )


def _warn_about_where_data_lives(
    spec: JobSpec, cluster: Cluster, kind: DataKind, fits_on_node: bool, shared: bool, notes: Notes
) -> None:
    if spec.workload == Workload.TRAINING and not fits_on_node:
        notes.warn(
            "training_from_network",
            "Training will read its data over the network, which is slow and loads the cluster "
            "for everybody. Train on a subset that fits node-local storage if you can, and read "
            "large sequential chunks (e.g. sharded archives).",
            sources.PROCESSING_TRAINING,
            "dataset_gb",
        )
    path = spec.data_path.strip()
    if many_files(spec, cluster):
        if kind in (DataKind.SHARDS, DataKind.ARCHIVE) and path:
            keep = "kept as large archives, as they should be on shared storage"
        elif shared:
            keep = f"keep the dataset on shared storage as shards of about {data.SHARD_GB} GB"
        else:
            keep = "keep the dataset as one archive (tar) on shared storage"
        notes.warn(
            "many_small_files",
            f"{spec.file_count:,} files: {keep}. Streaming many files from shared storage is "
            "slow, and every file counts against the file quota.",
            sources.SMALL_FILES,
            "file_count",
        )
    elif small_files(spec, cluster):
        keep = f"shards of about {data.SHARD_GB} GB" if shared else "one tar archive"
        notes.tip(
            "small_files",
            f"Its files average {mean_file_kb(spec):,.0f} kB: shared storage is built for large "
            f"files, so keep the dataset as {keep}.",
            sources.ARCHIVE_DATASET,
            "file_count",
        )
    if should_archive(spec, cluster) and kind == DataKind.FOLDER and path:
        if shared:
            notes.tip(
                "make_shards",
                "Read in place, this folder's files would be opened one by one over the "
                "network. Cut it once into shards on a login node: "
                f"`{data.shard_command(path, spec.file_count, spec.dataset_gb)}`, then give "
                f"{data.shards_folder(path)} as the data path, as a folder of shards.",
                sources.SMALL_FILES,
                "data_path",
            )
        else:
            notes.tip(
                "archive_folder",
                "The job would copy this folder to the node file by file, which is slow for "
                "many small files. Archive it once on a login node: "
                f"`{data.archive_command(path)}`, then give the archive as the data path.",
                sources.ARCHIVE_DATASET,
                "data_path",
            )
    if shared and should_archive(spec, cluster) and kind in (DataKind.SHARDS, DataKind.ARCHIVE):
        what = "each shard" if kind == DataKind.SHARDS else "the archive"
        reader = (
            "Python's zipfile, in the order the members were written"
            if data.is_zip(path)
            else "WebDataset, or Python's tarfile.open(path, 'r|*')"
        )
        notes.tip(
            "read_as_stream",
            f"$DATA_PATH is {'the folder of shards' if kind == DataKind.SHARDS else 'the archive'}"
            f" on shared storage: have the data loader read {what} as a stream, member after "
            f"member ({reader}), never by random access to single members.",
            sources.SMALL_FILES,
            "data_path",
        )
    data_tier = cluster.tier(spec.data_location) if spec.data_location else None
    if (
        data_tier
        and data_tier.quota_files
        and spec.file_count > data_tier.quota_files
        and (kind == DataKind.FOLDER or not (path or spec.data_kind))  # not one file of many
    ):
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


def _check_quota(
    spec: JobSpec, cluster: Cluster, kept_on: StorageTier | None, notes: Notes
) -> None:
    """The dataset against the quota of the tier it lives on (or the plan keeps it on)."""
    tier = cluster.tier(spec.data_location) if spec.data_location else kept_on
    if tier is None or not tier.quota_bytes or spec.dataset_gb * GB <= tier.quota_bytes:
        return
    notes.warn(
        "over_quota",
        f"{describe_gb(spec.dataset_gb)} is more than {tier.name}'s quota of "
        f"{describe_bytes(tier.quota_bytes)}{_where(tier)}: the data cannot all be kept there. "
        "Keep it where the quota allows, or ask the site for more space.",
        tier.source or sources.STORAGE_AREAS,
        "dataset_gb",
    )


# Under this quota a tier is too small for results and checkpoints (home on the federation's
# sites: 004 keeps it for code and small files).
SMALL_QUOTA_BYTES = 100 * 1000**3


def _check_results(spec: JobSpec, cluster: Cluster, notes: Notes) -> None:
    """Where the results and checkpoints go, when the path says which tier that is."""
    tier = tier_of_path(cluster, spec.results_dir)
    if tier is None:
        return
    source = tier.source or sources.STORAGE_AREAS
    # Where the site keeps checkpoints elsewhere (checkpoint_plan), the results go alone.
    kept = "results" if cluster.policy.checkpoint_dir else "results and checkpoints"
    if tier.kind in (TierKind.NODE_LOCAL, TierKind.MEMORY):  # on the node, not shared storage
        notes.warn(
            "results_not_persistent",
            f"{spec.results_dir} is on {tier.name}{_where(tier)}, on the node itself: "
            f"{tier.purge_policy or 'its files may be removed at any time.'} Write {kept} to "
            "persistent shared storage.",
            source,
            "results_dir",
        )
    elif tier.quota_bytes is not None and tier.quota_bytes < SMALL_QUOTA_BYTES:
        quota = f" (quota {describe_bytes(tier.quota_bytes)}" if tier.quota_bytes else " ("
        quota += f", {tier.quota_files:,} files)" if tier.quota_files else ")"
        quota = "" if quota == " ()" else quota
        notes.warn(
            "results_small_quota",
            f"{spec.results_dir} is on {tier.name}{quota}: a small space, meant for code and "
            f"small files, which large {kept} fill quickly. Write them to "
            f"{cluster.policy.results_dir or 'project or scratch storage'} instead.",
            source,
            "results_dir",
        )


# The variables paths start with, and the kind of storage each names.
_TIER_VARIABLES = {
    "HOME": TierKind.HOME,
    "SCRATCH": TierKind.SCRATCH,
    "PROJECT": TierKind.PROJECT,
    "SLURM_TMPDIR": TierKind.NODE_LOCAL,
}


def tier_of_path(cluster: Cluster, path: str) -> StorageTier | None:
    """The published tier a path is on: by the tier's own path (a variable in it, such as
    def-$ACCOUNT, stands for any name), else by the variable the path starts with, as the site
    sets it in jobs; None when it cannot be told."""
    variable, rest = split_path(path.strip())
    if not (variable or rest):
        return None
    path = f"${variable}{rest}" if variable else rest  # ~ and ${HOME} as $HOME
    matches = [t for t in cluster.storage_tiers if t.path and _tier_pattern(t.path).match(path)]
    if matches:
        return max(matches, key=lambda t: len(t.path))
    for name, value in cluster.environment.variables:  # e.g. $SCRATCH is /scratch/$USER
        if name == variable and value and not value.startswith(f"${name}"):
            found = tier_of_path(cluster, value + rest)
            if found:
                return found
    kind = _TIER_VARIABLES.get(variable)
    return cluster.tier(kind) if kind else None


def _tier_pattern(tier_path: str) -> re.Pattern:
    parts = re.split(r"(\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)", tier_path.rstrip("/"))
    body = "".join(
        # The tier's own leading variable stays itself; one inside the path stands for a name.
        re.escape(part) if i % 2 == 0 or (i == 1 and parts[0] == "") else "[^/]+"
        for i, part in enumerate(parts)
    )
    return re.compile(rf"{body}(/|$)")


def results_default(cluster: Cluster) -> tuple[str, str, Source | None]:
    """(where results and checkpoints go unless the user says otherwise, why, on whose
    advice): the cluster's published results directory, or "" and where the documents say
    they belong when the site publishes no path for it."""
    path = cluster.policy.results_dir
    tier = tier_of_path(cluster, path) if path else None
    if path:
        on = f" on {tier.name}" if tier else ""
        return (
            path,
            f"{cluster.name}'s results directory{on}, published by its admins.",
            tier.source if tier and tier.source else cluster.policy.source,
        )
    project = cluster.tier(TierKind.PROJECT)
    if project is not None:
        return (
            "",
            f"{cluster.name} keeps results in {project.name.lower()}"
            + (f" ({project.path})" if project.path else ", whose path it does not publish")
            + ": enter yours.",
            project.source,
        )
    return "", f"{cluster.name} publishes no results directory: enter yours.", None


def checkpoint_plan(cluster: Cluster) -> CheckpointPlan:
    """Where the job's checkpoints go: the folder the site's guidance keeps checkpoint files in
    (e.g. scratch, 004), one per job name so that every part of a chain finds the last one; else
    the results' own checkpoints folder, which outlives the job."""
    policy = cluster.policy
    root = policy.checkpoint_dir.rstrip("/")
    if root:
        tier = tier_of_path(cluster, root)
        on = tier.name if tier else root
        reason = (
            f"{cluster.name}'s guidance keeps checkpoint files on {on}, apart from the results. "
            "Named by the job, the folder is the same for every part of a chain, so each part "
            "resumes from the last checkpoint."
        )
        if tier is not None and not tier.persistent:
            reason += (
                f" {tier.name} is not kept for good: copy the checkpoint you want to keep to the "
                "results."
            )
        source = policy.checkpoint_source or (tier.source if tier else None) or policy.source
        return CheckpointPlan(root, reason, source, tier)
    reason = f"{cluster.name} names no place of their own for checkpoints"
    node_local = cluster.tier(TierKind.NODE_LOCAL)
    if node_local is not None and not node_local.per_job and not node_local.persistent:
        # One node's disk, wiped when it fills: the next part of a chain may run elsewhere.
        reason += f", and its node-local storage{_where(node_local)} is one node's and may be wiped"
    reason += ": they stay with the results, which outlive the job."
    return CheckpointPlan("", reason, policy.checkpoint_source or policy.source)


def _where(tier: StorageTier) -> str:
    return f" ({tier.path})" if tier.path else ""


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
    elif kind == DataKind.SHARDS:
        action, source = "Copy the shards to the node", copy_source
        command = f"{prefix}rsync -a --info=progress2 {DATA_SOURCE}/ {STAGE_DIR}/"
        why = f"The program reads each shard as a stream from {tier.path}, not over the network."
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
