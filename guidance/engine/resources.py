"""How much to ask Slurm for, and how long work is split into a chain of checkpointed jobs."""

import math

from guidance.engine import sources
from guidance.engine.gpu_share import gpu_share
from guidance.engine.notes import Notes, describe_hours
from guidance.engine.placement import gpus_per_node
from guidance.engine.storage import gb_to_mb
from guidance.engine.types import (
    Amount,
    ChainPlan,
    Cluster,
    JobSpec,
    Launch,
    LaunchPlan,
    Partition,
    Placement,
    Resources,
    Scheduler,
    StoragePlan,
)


def plan_chain(
    spec: JobSpec, cluster: Cluster, partition: Partition, notes: Notes
) -> ChainPlan | None:
    chunk = cluster.policy.checkpoint_chunk_hours
    # A partition whose limit is under the chunk sets the length of each part.
    per_job = min(chunk, partition.max_hours)
    by_hand = spec.overrides.minutes
    if spec.checkpointing and by_hand:
        # Each part runs as long as the time limit the user set, and the chain has as many parts
        # as the work then needs: never fewer, which would stop the work short.
        per_job = min(by_hand / 60, partition.max_hours)
    if spec.hours <= per_job:
        return None
    if not spec.checkpointing:
        if spec.hours <= chunk:
            return None  # over the partition's limit: validation says so
        chained = (
            f", and the portal will run it as a chain of {describe_hours(chunk)} jobs, which "
            "also start sooner"
            if cluster.scheduler == Scheduler.SLURM
            else ""  # the portal writes no jobs for another scheduler
        )
        notes.warn(
            "long_without_checkpoints",
            f"{describe_hours(spec.hours)} is longer than {describe_hours(chunk)}: an outage "
            f"would lose all of it. Make the program save and resume from checkpoints{chained}.",
            sources.LONG_RUNNING,
            "checkpointing",
        )
        return None
    # round() keeps 72 h / 24 h at 3 jobs despite floating point.
    jobs = math.ceil(round(spec.hours / per_job, 6))
    return ChainPlan(
        jobs,
        per_job,
        f"{describe_hours(spec.hours)} with checkpoints: a chain of {jobs} jobs of "
        f"{describe_hours(per_job)}, one after another (--array=1-{jobs}%1), each resuming "
        "from the newest checkpoint. Short jobs start sooner and an outage loses one part only.",
        sources.CHECKPOINT_CHAIN,
    )


def size_resources(
    spec: JobSpec,
    cluster: Cluster,
    partition: Partition,
    storage: StoragePlan,
    chain: ChainPlan | None,
    launch: LaunchPlan,
) -> Resources:
    share = gpu_share(cluster, partition)
    gpus = gpus_per_node(spec)
    cpus = min(share.cpus * gpus, partition.cpus_per_node)
    # One task per GPU: each task gets that GPU's share of the CPUs.
    tasks = gpus if launch.launch == Launch.GPU_TASKS else 1
    memory = min(
        base_memory_mb(cluster, partition, gpus) + _data_memory_mb(spec, storage),
        partition.memory_per_node_mb,
    )
    hours = chain.hours_per_job if chain else spec.hours
    data_note = (
        f", plus {spec.dataset_gb:g} GB for the data held in memory"
        if storage.placement == Placement.MEMORY
        else ""
    )
    return Resources(
        nodes=Amount(
            spec.nodes,
            "One node." if spec.nodes == 1 else f"{spec.nodes} nodes, as the program spans nodes.",
            sources.SBATCH_DIRECTIVES,
        ),
        gpus_per_node=Amount(gpus, _why_gpus(spec, gpus), sources.SBATCH_ELEMENTS),
        tasks_per_node=Amount(tasks, launch.reason, launch.source),
        cpus_per_task=Amount(max(1, cpus // tasks), share.cpus_reason, share.cpus_source),
        memory_mb=Amount(memory, f"{share.memory_reason}{data_note}.", share.memory_source),
        minutes=Amount(
            math.ceil(round(hours * 60, 6)),
            f"{describe_hours(hours)} per job"
            + (f", {chain.jobs} jobs in the chain." if chain else "."),
            chain.source if chain else sources.SBATCH_ELEMENTS,
        ),
    )


def base_memory_mb(cluster: Cluster, partition: Partition, gpus: int) -> int:
    """The job's memory besides data it holds in memory: its GPUs' share."""
    return gpu_share(cluster, partition).memory_mb * gpus


def _data_memory_mb(spec: JobSpec, storage: StoragePlan) -> int:
    # Data held in memory, including a /tmp RAM disk, counts against the job's memory limit (004).
    return gb_to_mb(spec.dataset_gb) if storage.placement == Placement.MEMORY else 0


def _why_gpus(spec: JobSpec, gpus: int) -> str:
    if not spec.multi_gpu:
        return (
            "One GPU: PyTorch and TensorFlow use a single GPU unless the program is written "
            "for several."
        )
    total = gpus * spec.nodes
    return f"{total} GPUs for a program that uses several ({gpus} per node)."
