"""Warnings and tips that do not change the plan but make the job cheaper or faster."""

from guidance.engine import sources
from guidance.engine.types import ChainPlan, Cluster, JobSpec, Resources, Scheduler, Workload


def advise(
    spec: JobSpec,
    cluster: Cluster,
    resources: Resources | None,
    notes,
    chain: ChainPlan | None = None,
) -> None:
    _gpu_count(spec, notes)
    if cluster.scheduler != Scheduler.SLURM:
        notes.warn(
            "guidance_only",
            f"{cluster.name} runs {cluster.scheduler.label}, not Slurm: the portal gives "
            "its advice but cannot write or submit a job script for it.",
            sources.RUNAI if cluster.scheduler == Scheduler.RUNAI else None,
        )
    if spec.workload in (Workload.DEBUGGING, Workload.INTERACTIVE):
        notes.tip(
            "try_interactively",
            "Try the program in an interactive job (salloc) first: problems show up in minutes, "
            "not after the queue.",
            sources.INTERACTIVE_FIRST,
        )
    if spec.sweep is not None:
        pass  # the sweep's plan says how its runs are grouped (recommend._sweep)
    elif spec.similar_runs > 1 and chain:
        # The chain's --array=1-N%1 is the array: one script is one run.
        notes.warn(
            "similar_runs_with_chain",
            f"{spec.similar_runs} similar runs, each a chain of {chain.jobs} jobs: this script is "
            f"one run (its --array={chain.array} runs the chain's parts one after another). "
            "Submit it once per run, each with its own job name, so that each run keeps its own "
            "checkpoints and results.",
            sources.SIMILAR_JOBS,
            "similar_runs",
        )
    elif spec.similar_runs > 1 and cluster.scheduler == Scheduler.SLURM:
        notes.tip(
            "similar_runs_array",
            f"{spec.similar_runs} similar runs: submit them as one job array "
            f"(--array=1-{spec.similar_runs}) rather than one by one, or group short ones into "
            "one job with META, GLOST or GNU Parallel.",
            sources.SIMILAR_JOBS,
            "similar_runs",
        )
    if spec.workload in (Workload.TRAINING, Workload.INFERENCE):
        _utilization(spec, cluster, resources, notes)


def _gpu_count(spec: JobSpec, notes) -> None:
    if spec.gpu_count > 1 and not spec.multi_gpu:
        notes.warn(
            "one_gpu_unless_multi",
            f"You asked for {spec.gpu_count} GPUs, but the program does not use several: it gets "
            "one. By default PyTorch and TensorFlow use a single GPU; the others would sit idle.",
            sources.SBATCH_ELEMENTS,
            "gpu_count",
        )
    if spec.nodes > 1 and not spec.multi_gpu:
        notes.warn(
            "nodes_without_multi_gpu",
            f"{spec.nodes} nodes only help a program that runs on several GPUs across nodes "
            "(e.g. DistributedDataParallel).",
            sources.SBATCH_ELEMENTS,
            "nodes",
        )
    if spec.multi_gpu:
        notes.tip(
            "use_ddp",
            "Use torch.nn.parallel.DistributedDataParallel (started with torchrun or srun), not "
            "torch.nn.DataParallel: it scales much better.",
            sources.CAREFUL_TWEAKS,
        )


def _loader_workers(spec: JobSpec, resources: Resources | None) -> str:
    """DataLoader workers per training process: a task's CPUs, shared by the processes it starts
    (a launcher such as torchrun starts one per GPU of its node)."""
    if resources is None:
        return "num_workers=the CPUs you ask for"
    cpus = resources.cpus_per_task.value
    gpus = resources.gpus_per_node.value
    one_per_task = resources.tasks_per_node.value > 1  # srun python, mpirun: a task per GPU
    if one_per_task or not spec.multi_gpu or gpus < 2:
        return f"num_workers={cpus} (the CPUs of each process)"
    return f"num_workers={cpus // gpus} in each of the {gpus} processes per node ({cpus} CPUs)"


def _utilization(spec: JobSpec, cluster: Cluster, resources: Resources | None, notes) -> None:
    target = cluster.policy.utilization_target_percent
    notes.tip(
        "utilization_target",
        f"Aim for more than {target}% GPU compute utilization (not memory): the busier the GPU, "
        "the sooner the job is done and the fewer GPUs everybody needs.",
        sources.UTILIZATION_TARGET,
    )
    notes.tip(
        "dataloader",
        f"DataLoader: {_loader_workers(spec, resources)}, pin_memory=True, "
        "persistent_workers=True, prefetch_factor=4, and the largest batch_size that fits.",
        sources.DATALOADER,
    )
    notes.tip(
        "no_brainer_tweaks",
        "torch.backends.cudnn.benchmark = True, TF32 matmuls, zero_grad(set_to_none=True), "
        "tensors created on the GPU, and torch.no_grad() for validation and inference.",
        sources.NO_BRAINER_TWEAKS,
    )
    if spec.workload == Workload.TRAINING:
        notes.tip(
            "mixed_precision",
            "Try automatic mixed precision (torch.autocast): often twice the speed at half the "
            "memory, once the model is stable.",
            sources.CAREFUL_TWEAKS,
        )
