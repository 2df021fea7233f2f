"""Resources the user sets by hand. Beyond a limit of the node type Slurm would refuse the job or
never start it, so that is an error naming the limit; against the cluster's guidance it is taken,
with a warning that quotes the rule. Either way the script asks for what the user set."""

from dataclasses import replace

from guidance.engine import sources
from guidance.engine.gpu_share import gpu_share
from guidance.engine.notes import Notes, describe_hours
from guidance.engine.types import Amount, ChainPlan, Cluster, JobSpec, Partition, Resources


def apply_overrides(
    spec: JobSpec,
    cluster: Cluster,
    partition: Partition,
    resources: Resources,
    chain: ChainPlan | None,
    notes: Notes,
) -> Resources:
    wanted = spec.overrides
    changed = {}
    if wanted.cpus_per_task is not None:
        changed["cpus_per_task"] = _cpus(wanted.cpus_per_task, cluster, partition, resources, notes)
    if wanted.memory_mb is not None:
        changed["memory_mb"] = _memory(wanted.memory_mb, cluster, partition, resources, notes)
    if wanted.minutes is not None:
        changed["minutes"] = _minutes(
            wanted.minutes, spec, cluster, partition, resources, chain, notes
        )
    return replace(resources, **{k: v for k, v in changed.items() if v is not None})


def _set_by_hand(value: int, recommended: Amount, shown: str) -> Amount:
    reason = (
        f"You set it; the portal recommends {shown}: {recommended.reason}"
        if value != recommended.value
        else f"You set it, as the portal recommends: {recommended.reason}"
    )
    return Amount(value, reason, recommended.source, recommended=recommended.value)


def _cpus(
    value: int, cluster: Cluster, partition: Partition, resources: Resources, notes: Notes
) -> Amount | None:
    tasks = resources.tasks_per_node.value
    most = partition.cpus_per_node // tasks
    recommended = resources.cpus_per_task
    if value > most:
        per_task = f", {most} per task for its {tasks} tasks" if tasks > 1 else ""
        notes.error(
            "cpus_over_node",
            f"{partition.name} nodes have {partition.cpus_per_node} CPUs{per_task}: ask for "
            f"{most} at most.",
            partition.source,
            "cpus_per_task",
        )
        return None
    share = gpu_share(cluster, partition)
    ratio = f"{cluster.name} gives {share.cpus} CPUs per GPU on {partition.name} nodes"
    if value > recommended.value:
        notes.warn(
            "cpus_over_ratio",
            f"{ratio} ({recommended.value} per task here): the CPUs beyond that leave other "
            "jobs' GPUs on the node without CPUs to feed them.",
            recommended.source,
            "cpus_per_task",
        )
    elif value < recommended.value:
        notes.warn(
            "cpus_under_ratio",
            f"{ratio} ({recommended.value} per task here): with fewer, the data loading may not "
            "keep the GPUs busy.",
            recommended.source,
            "cpus_per_task",
        )
    return _set_by_hand(value, recommended, str(recommended.value))


def _memory(
    value: int, cluster: Cluster, partition: Partition, resources: Resources, notes: Notes
) -> Amount | None:
    recommended = resources.memory_mb
    if value > partition.memory_per_node_mb:
        notes.error(
            "memory_over_node",
            f"{partition.name} nodes have {partition.memory_per_node_mb}M of memory: ask for "
            "that at most.",
            partition.source,
            "memory",
        )
        return None
    if value > recommended.value:
        notes.warn(
            "memory_over_guidance",
            f"{cluster.name} asks for {gpu_share(cluster, partition).memory_mb}M per GPU "
            f"({recommended.value}M for this job): memory beyond that is kept from other jobs "
            "and counts against your share.",
            recommended.source,
            "memory",
        )
    return _set_by_hand(value, recommended, f"{recommended.value}M")


def _minutes(
    value: int,
    spec: JobSpec,
    cluster: Cluster,
    partition: Partition,
    resources: Resources,
    chain: ChainPlan | None,
    notes: Notes,
) -> Amount | None:
    recommended = resources.minutes
    hours = value / 60
    if hours > partition.max_hours:
        notes.error(
            "time_over_partition",
            f"{partition.name} jobs on {cluster.name} may run {describe_hours(partition.max_hours)}"
            f" at most: ask for that or less"
            + (", and let the checkpoints carry the rest." if spec.checkpointing else "."),
            partition.hours_source or cluster.max_hours_source,
            "time_limit",
        )
        return None
    chunk = cluster.policy.checkpoint_chunk_hours
    if hours > chunk:
        notes.warn(
            "time_over_chunk",
            f"{cluster.name} asks for jobs of {describe_hours(chunk)} at most, resumed from "
            f"checkpoints: a job of {describe_hours(hours)} loses all of it in an outage and "
            "waits longer to start.",
            sources.LONG_RUNNING,
            "time_limit",
        )
    needed = chain.hours_per_job if chain else spec.hours
    if hours < needed:
        notes.warn(
            "time_under_duration",
            f"{describe_hours(hours)} is shorter than the {describe_hours(needed)} the job "
            "needs: Slurm stops it at its time limit"
            + (", and the chain's next part resumes it." if chain else "."),
            sources.SBATCH_TIME,
            "time_limit",
        )
    return _set_by_hand(value, recommended, f"{describe_hours(recommended.value / 60)}")
