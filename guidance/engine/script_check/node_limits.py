"""What no node of the cluster can give: a GPU type it lacks, more GPUs, CPUs or memory per node
than its node types have, a memory size sbatch cannot read, and GPU requests that cancel out."""

from guidance.engine import sources
from guidance.engine.script_check.findings import Finding, Severity
from guidance.engine.script_check.parse import Script
from guidance.engine.script_check.request import Request, node_types, size_mb
from guidance.engine.types import Cluster, Note, Partition


def check_node_limits(script: Script, request: Request, cluster: Cluster, notes: list) -> None:
    _check_memory_size(request, notes)
    if not cluster.partitions:
        return
    _check_gpu_type(request, cluster, notes)
    _check_duplicates(request, notes)
    # A GPU type the cluster lacks: any node type is as good a guess as another.
    kinds = node_types(request, script, cluster) or cluster.partitions
    source = next((p.source for p in kinds if p.source), None) or sources.PUBLIC_HARDWARE
    where = _node_types_in_words(kinds, request)
    most_gpus = max(p.gpus_per_node for p in kinds)
    if request.gpus_per_node > most_gpus:
        asked = request.gpu_requests[-1]
        notes.append(
            Finding(
                "gpus_over_node",
                f"{asked} asks for {request.gpus_per_node} GPUs on each node, but {where} "
                f"{'has' if len(kinds) == 1 else 'have'} at most {most_gpus}: Slurm refuses "
                "the job (or it waits forever).",
                source,
                "gpus",
                severity=Severity.FAILS,
                lines=(asked.line,),
                fix=f"Ask for at most {most_gpus} GPUs per node, or spread the job over "
                f"--nodes={-(-request.gpus_per_node // most_gpus)} with "
                f"--gpus-per-node={most_gpus} if the program runs on several nodes.",
            )
        )
    most_cpus = max(p.cpus_per_node for p in kinds)
    if request.cpus_per_node > most_cpus:
        lines = tuple(
            d.line for d in script.directives if d.option in ("cpus-per-task", "cpus-per-gpu")
        )
        notes.append(
            Finding(
                "cpus_over_node",
                f"The job asks for {request.cpus_per_node} CPUs on each node, but {where} "
                f"{'has' if len(kinds) == 1 else 'have'} at most {most_cpus}: Slurm refuses it.",
                source,
                "cpus_per_task",
                severity=Severity.FAILS,
                lines=lines,
                fix=f"Ask for at most {most_cpus} CPUs per node (tasks per node times "
                "--cpus-per-task).",
            )
        )
    most_memory = max(p.memory_per_node_mb for p in kinds)
    memory = request.memory_per_node_mb
    if memory and memory > most_memory:
        notes.append(
            Finding(
                "memory_over_node",
                f"{request.memory} asks for {_mb(memory)} on each node, but {where} "
                f"{'has' if len(kinds) == 1 else 'have'} at most {_mb(most_memory)}: "
                "Slurm refuses the job.",
                source,
                "memory",
                severity=Severity.FAILS,
                lines=(request.memory.line,),
                fix="Ask for the memory the job needs, in proportion to its GPUs.",
            )
        )


def _mb(mb: float) -> str:
    return f"{mb:,.0f} MB"


def _node_types_in_words(kinds: tuple[Partition, ...], request: Request) -> str:
    if len(kinds) == 1:
        return f"its {kinds[0].name} nodes"
    return "the cluster's " + (f"{request.gpu_type} nodes" if request.gpu_type else "nodes")


def _check_memory_size(request: Request, notes: list) -> None:
    memory = request.memory
    if memory is None or memory.value is None or size_mb(memory.value) is not None:
        return
    notes.append(
        Finding(
            "bad_memory",
            f"sbatch cannot read {memory}: a memory size is a whole number with an optional "
            "unit K, M, G or T (M when none), without spaces or decimals.",
            sources.SBATCH_MEMORY,
            "memory",
            severity=Severity.FAILS,
            lines=(memory.line,),
            fix=f"Write it like --{memory.option}=32000M or --{memory.option}=32G.",
        )
    )


def _check_gpu_type(request: Request, cluster: Cluster, notes: list[Note]) -> None:
    if not request.gpu_requests or not request.gpu_type or not cluster.gpu_types:
        return
    if cluster.gpu_type(request.gpu_type) is not None:
        return
    asked = request.gpu_requests[-1]
    known = ", ".join(g.name for g in cluster.gpu_types)
    notes.append(
        Finding(
            "gres_type_unknown",
            f"{asked} asks for GPU type \u201c{request.gpu_type}\u201d, which {cluster.name} "
            f"does not publish: Slurm refuses a type it does not know. Its GPU types: {known}.",
            next((g.source for g in cluster.gpu_types if g.source), None)
            or sources.PUBLIC_HARDWARE,
            "gpus",
            severity=Severity.FAILS,
            lines=(asked.line,),
            fix=f"Ask for one of {known}, or for any GPU with --gres=gpu:N.",
        )
    )


def _check_duplicates(request: Request, notes: list) -> None:
    if len(request.gpu_requests) < 2:
        return
    used = request.gpu_requests[-1]
    others = ", ".join(str(d) for d in request.gpu_requests[:-1])
    notes.append(
        Finding(
            "duplicate_gpu_request",
            f"The script asks for GPUs {len(request.gpu_requests)} times: sbatch keeps only "
            f"the last, {used}, and drops {others}, with whatever type or count it named.",
            sources.SBATCH_ELEMENTS,
            "gpus",
            severity=Severity.WASTES,
            lines=tuple(d.line for d in request.gpu_requests),
            fix="Keep one GPU request, with the type and count you want (e.g. --gres=gpu:TYPE:N).",
        )
    )
