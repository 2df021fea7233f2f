"""Which node type (partition and GPU type) a job should ask for, and why not the others."""

import math
from collections.abc import Callable
from dataclasses import dataclass

from guidance.engine import sources
from guidance.engine.notes import Notes, describe_gb, describe_hours
from guidance.engine.sources import Source
from guidance.engine.types import (
    Cluster,
    GpuType,
    JobSpec,
    Partition,
    PartitionChoice,
    RejectedPartition,
    Workload,
)


def gpus_wanted(spec: JobSpec) -> int:
    """One GPU unless the program is known to use several (002: PyTorch and TensorFlow use one)."""
    return spec.gpu_count if spec.multi_gpu else 1


def gpus_per_node(spec: JobSpec) -> int:
    return math.ceil(gpus_wanted(spec) / spec.nodes)


@dataclass(frozen=True)
class _Preference:
    """One ordering criterion: its score for a partition (lower wins) and why a loser lost."""

    score: Callable[[Partition, GpuType], float]
    why_not: Callable[[Partition, GpuType], str]
    source: Callable[[Partition, GpuType], Source | None]


def choose_partition(spec: JobSpec, cluster: Cluster, notes: Notes) -> PartitionChoice | None:
    rejected: list[RejectedPartition] = []
    viable: list[tuple[Partition, GpuType]] = []
    for partition in cluster.partitions:
        gpu = cluster.gpu_type(partition.gpu_type)
        if gpu is None:  # admins published a node type without its GPU: skip, don't guess
            continue
        why, why_source = _cannot_run(spec, partition, gpu)
        if why:
            rejected.append(RejectedPartition(partition, why, why_source))
        else:
            viable.append((partition, gpu))

    if not viable:
        reasons = "; ".join(f"{r.partition.name}: {r.why}" for r in rejected)
        notes.error(
            "no_partition_fits",
            f"No node type on {cluster.name} can run this job ({reasons}).",
            field="gpu_count" if spec.multi_gpu else None,
        )
        return None

    preferences = _preferences(spec)
    viable.sort(key=lambda pg: (*(p.score(*pg) for p in preferences), pg[0].name))
    best, best_gpu = viable[0]
    reason, source = _why_chosen(spec, cluster, best, best_gpu)
    if spec.overrides.partition:
        return _chosen_by_hand(spec, cluster, (best, best_gpu, reason), rejected, notes)
    for partition, gpu in viable[1:]:
        loser = next(
            (p for p in preferences if p.score(partition, gpu) > p.score(best, best_gpu)), None
        )
        if loser is None:
            why, source_ = f"as good a fit; {best.name} comes first by name", partition.source
        else:
            why, source_ = loser.why_not(partition, gpu), loser.source(partition, gpu)
        rejected.append(RejectedPartition(partition, why, source_))

    _warn_about_full_utilization(spec, best_gpu, cluster, notes)
    return PartitionChoice(best, best_gpu, reason, source, tuple(rejected))


def _chosen_by_hand(
    spec: JobSpec,
    cluster: Cluster,
    recommended: tuple[Partition, GpuType, str],
    rejected: list[RejectedPartition],
    notes: Notes,
) -> PartitionChoice | None:
    """The node type the user named: refused where it cannot run the job (a limit), taken with
    a warning where the cluster keeps it for other work (guidance)."""
    wanted = (spec.overrides.partition or "").casefold()
    named = next(
        (
            p
            for p in cluster.partitions
            if wanted in (p.name.casefold(), p.slurm_partition.casefold())
        ),
        None,
    )
    gpu = cluster.gpu_type(named.gpu_type) if named else None
    if named is None or gpu is None:
        names = ", ".join(p.name for p in cluster.partitions)
        notes.error(
            "unknown_partition",
            f"{cluster.name} has no node type {spec.overrides.partition}: choose one of {names}.",
            field="partition",
        )
        return None
    refusal = next((r for r in rejected if r.partition is named), None)
    if refusal is not None:
        notes.error(
            "partition_cannot_run",
            f"{named.name} cannot run this job: {refusal.why}.",
            refusal.source,
            "partition",
        )
        return None
    best, _, why_best = recommended
    if named is best:
        return PartitionChoice(named, gpu, f"You chose {named.name}. {why_best}", named.source, ())
    reserved = _reserved_for_other_work(spec)
    if reserved.score(named, gpu):
        notes.warn(
            "partition_set_aside",
            f"{cluster.name} sets {named.name} aside for {_purposes(named)}, not {spec.workload} "
            f"work: the portal recommends {best.name}.",
            _purpose_source(named),
            "partition",
        )
    _warn_about_full_utilization(spec, gpu, cluster, notes)
    return PartitionChoice(
        named,
        gpu,
        f"You chose {named.name}.",
        named.source,
        (RejectedPartition(best, f"the portal's choice: {why_best}", best.source),),
    )


def _cannot_run(spec: JobSpec, partition: Partition, gpu: GpuType) -> tuple[str, Source | None]:
    """Why the node type cannot run the job, and where the limit it hits is stated."""
    if spec.gpu_type and gpu.name.casefold() != spec.gpu_type.casefold():
        return f"it has {gpu.name} GPUs, and you asked for {spec.gpu_type}", partition.source
    if spec.gpu_mem_gb and spec.gpu_mem_gb > gpu.memory_gb:
        return (
            f"its {gpu.name} has {describe_gb(gpu.memory_gb)}, "
            f"less than the {describe_gb(spec.gpu_mem_gb)} needed"
        ), gpu.source or partition.source
    if gpus_per_node(spec) > partition.gpus_per_node:
        why = f"it has {partition.gpus_per_node} GPUs per node, not {gpus_per_node(spec)}"
        return why, partition.source
    if not spec.checkpointing and spec.hours > partition.max_hours:
        why = f"its jobs may run {describe_hours(partition.max_hours)} at most"
        return why, partition.hours_source or partition.source
    return "", None


def _purpose_source(partition: Partition) -> Source | None:
    return partition.purpose_source or partition.source


def _reserved_for_other_work(spec: JobSpec) -> _Preference:
    return _Preference(
        score=lambda p, g: 1 if p.purposes and spec.workload not in p.purposes else 0,
        why_not=lambda p, g: f"set aside for {_purposes(p)}",
        source=lambda p, g: _purpose_source(p),
    )


def _full_utilization_only(spec: JobSpec) -> _Preference:
    return _Preference(
        score=lambda p, g: (
            1 if g.expects_full_utilization and not spec.expects_full_utilization else 0
        ),
        why_not=lambda p, g: (
            f"{g.name} GPUs are for jobs that keep them near 100% busy, and you do not expect that"
        ),
        source=lambda p, g: g.source or sources.PROCESSING_TRAINING,
    )


def _meant_for_this_work(spec: JobSpec) -> _Preference:
    return _Preference(
        score=lambda p, g: 0 if spec.workload in p.purposes else 1,
        why_not=lambda p, g: f"not the node type meant for {spec.workload} work",
        source=lambda p, g: _purpose_source(p),
    )


def _smallest_card_that_fits() -> _Preference:
    # Leave the big cards to the jobs that need their memory.
    return _Preference(
        score=lambda p, g: g.memory_gb,
        why_not=lambda p, g: (
            f"its {describe_gb(g.memory_gb)} {g.name} cards are better left to jobs that need "
            "that much memory"
        ),
        source=lambda p, g: g.source,
    )


def _fastest_card() -> _Preference:
    return _Preference(
        score=lambda p, g: -g.relative_speed,
        why_not=lambda p, g: f"{g.name} is slower",
        source=lambda p, g: g.source,
    )


def _slowest_card_that_does() -> _Preference:
    return _Preference(
        score=lambda p, g: g.relative_speed,
        why_not=lambda p, g: f"{g.name} is faster than this job can use",
        source=lambda p, g: g.source,
    )


def _preferences(spec: JobSpec) -> list[_Preference]:
    first = [
        _reserved_for_other_work(spec),
        _full_utilization_only(spec),
        _meant_for_this_work(spec),
    ]
    if spec.expects_full_utilization and spec.workload == Workload.TRAINING:
        # A job that keeps its GPU busy finishes sooner on a faster card.
        return [*first, _fastest_card(), _smallest_card_that_fits()]
    return [*first, _smallest_card_that_fits(), _slowest_card_that_does()]


def _why_chosen(
    spec: JobSpec, cluster: Cluster, partition: Partition, gpu: GpuType
) -> tuple[str, Source | None]:
    memory = f"{describe_gb(spec.gpu_mem_gb)} of GPU memory" if spec.gpu_mem_gb else "the job"
    if spec.gpu_type:
        return f"You asked for {gpu.name}; {partition.name} has it.", gpu.source
    if len(cluster.partitions) == 1:
        return (
            f"{partition.name} is {cluster.name}'s only GPU node type; its {gpu.name} "
            f"({describe_gb(gpu.memory_gb)}) fits {memory}.",
            partition.source or gpu.source,
        )
    if spec.workload in partition.purposes:
        return (
            f"{partition.name} is the node type set aside for {spec.workload} work, and its "
            f"{gpu.name} ({describe_gb(gpu.memory_gb)}) fits {memory}.",
            _purpose_source(partition),
        )
    if gpu.expects_full_utilization:
        if spec.expects_full_utilization:
            return (
                f"You expect to keep the GPU near 100% busy, so the {gpu.name} is yours to use.",
                gpu.source or sources.PROCESSING_TRAINING,
            )
        return (
            f"Only {gpu.name} has enough memory for {memory}; the cluster keeps it for jobs that "
            "use it near 100%.",
            gpu.source or sources.PROCESSING_TRAINING,
        )
    return (
        f"The {gpu.name} ({describe_gb(gpu.memory_gb)}) is the smallest card that fits {memory}, "
        "leaving larger cards to jobs that need them.",
        gpu.source or partition.source,
    )


def _warn_about_full_utilization(
    spec: JobSpec, gpu: GpuType, cluster: Cluster, notes: Notes
) -> None:
    if not gpu.expects_full_utilization or spec.expects_full_utilization:
        return
    others = [g.name for g in cluster.gpu_types if not g.expects_full_utilization]
    instead = f" If it cannot, use {' or '.join(others)} instead." if others else ""
    notes.warn(
        "full_utilization_expected",
        f"{cluster.name} asks for near-100% GPU utilization on {gpu.name}: make sure the job "
        f"keeps it busy (see the tips).{instead}",
        gpu.source or sources.PROCESSING_TRAINING,
        "expects_full_utilization",
    )


def _purposes(partition: Partition) -> str:
    return " and ".join(sorted(partition.purposes))
