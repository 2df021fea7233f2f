"""CPUs and memory in proportion to GPUs, where the site publishes its share per GPU: a job that
takes more leaves a node's other GPUs without CPUs or memory, one that takes too few CPUs
starves its own GPUs, and one that takes the whole node for a few GPUs idles the rest."""

from guidance.engine.gpu_share import SHARE_TOLERANCE
from guidance.engine.script_check.findings import (
    Finding,
    Severity,
    drop_directives,
    set_directive,
)
from guidance.engine.script_check.parse import Script
from guidance.engine.script_check.request import MEMORY_OPTIONS, Request, node_types
from guidance.engine.types import Cluster, Rule

# Fewer than this per GPU leaves no CPU for DataLoader workers (004: one per --cpus-per-task).
MIN_CPUS_PER_GPU = 2
CPU_OPTIONS = ("cpus-per-task", "cpus-per-gpu")


def check_shares(script: Script, request: Request, cluster: Cluster, notes: list) -> None:
    gpus = request.gpus_per_node
    if not gpus:
        return
    kinds = node_types(request, script, cluster)
    node_gpus = min((p.gpus_per_node for p in kinds), default=0)
    if request.whole_node and node_gpus and gpus < node_gpus:
        _whole_node(script, request, cluster, node_gpus, notes)
        return
    if request.whole_node:
        return
    _check_memory(script, request, cluster, notes)
    _check_cpus(script, request, cluster, notes)


def _share_fix(cluster: Cluster, gpus: int) -> str:
    return f"--mem={cluster.policy.memory_per_gpu_mb * gpus}M"


def _cpus_fix(cluster: Cluster, request: Request) -> str:
    per_task = max(1, cluster.policy.cpus_per_gpu * request.gpus_per_node // request.tasks_per_node)
    return f"--cpus-per-task={per_task}"


def _whole_node(script: Script, request: Request, cluster: Cluster, node_gpus: int, notes) -> None:
    how = [d for d in script.directives if d.option == "exclusive"]
    if request.memory_per_node_mb == 0:
        how.append(request.memory)
    rule = cluster.rule(Rule.MEMORY_PER_GPU)
    share = _share_fix(cluster, request.gpus_per_node)
    notes.append(
        Finding(
            "whole_node",
            f"{' and '.join(str(d) for d in how)} take{'s' if len(how) == 1 else ''} a whole "
            f"node, with its {node_gpus} GPUs, for a job that asks for {request.gpus_per_node}: "
            f"the other {node_gpus - request.gpus_per_node} sit idle, and the job waits until a "
            "node is entirely free.",
            rule.source if rule else None,
            "memory",
            severity=Severity.WASTES,
            lines=tuple(sorted({d.line for d in how})),
            fix=f"Ask for the GPUs' share instead, {share}, and no --exclusive."
            if rule
            else "Ask for the memory the job needs instead, and no --exclusive.",
            edits=drop_directives(script, ("exclusive",))
            + set_directive(script, MEMORY_OPTIONS, share)
            if rule
            else (),
        )
    )


def _check_memory(script: Script, request: Request, cluster: Cluster, notes: list) -> None:
    rule = cluster.rule(Rule.MEMORY_PER_GPU)
    memory = request.memory_per_node_mb
    if rule is None or not memory:
        return
    share = cluster.policy.memory_per_gpu_mb
    per_gpu = memory / request.gpus_per_node
    if per_gpu <= share * SHARE_TOLERANCE:
        return
    fix = _share_fix(cluster, request.gpus_per_node)
    notes.append(
        Finding(
            "memory_over_share",
            f"{request.memory} gives each of the job's {request.gpus_per_node} GPU"
            f"{'s' if request.gpus_per_node > 1 else ''} {per_gpu:,.0f} MB of memory; "
            f"{cluster.name} asks for at most {share:,}M per GPU. The rest of the node's memory "
            "belongs to its other GPUs, which then cannot be given out, and the job waits longer.",
            rule.source,
            "memory",
            severity=Severity.WASTES,
            lines=(request.memory.line,),
            fix=f"Ask for {fix} ({share:,}M for "
            + (
                f"each of its {request.gpus_per_node} GPUs"
                if request.gpus_per_node > 1
                else "its GPU"
            )
            + "), unless the program truly needs more.",
            edits=set_directive(script, MEMORY_OPTIONS, fix),
        )
    )


def _check_cpus(script: Script, request: Request, cluster: Cluster, notes: list) -> None:
    rule = cluster.rule(Rule.CPUS_PER_GPU)
    if rule is None:
        return
    ratio = cluster.policy.cpus_per_gpu
    per_gpu = request.cpus_per_node / request.gpus_per_node
    lines = tuple(d.line for d in script.directives if d.option in CPU_OPTIONS)
    lines = lines or (request.gpu_requests[-1].line,)
    fix = _cpus_fix(cluster, request)
    if per_gpu < MIN_CPUS_PER_GPU:
        given = "asks for" if request.cpus_given else "gets (no --cpus-per-task: one per task)"
        notes.append(
            Finding(
                "too_few_cpus",
                f"The job {given} {request.cpus_per_node} CPU"
                f"{'s' if request.cpus_per_node > 1 else ''} for {request.gpus_per_node} GPU"
                f"{'s' if request.gpus_per_node > 1 else ''}: too few to load and decode the "
                "data, so the GPUs wait for it. A PyTorch DataLoader wants as many workers as "
                f"--cpus-per-task; {cluster.name} gives {ratio} CPUs per GPU.",
                rule.source,
                "cpus_per_task",
                severity=Severity.WASTES,
                lines=lines,
                fix=f"Ask for {fix} and start as many DataLoader workers "
                "(num_workers=int(os.environ['SLURM_CPUS_PER_TASK'])).",
                edits=set_directive(script, CPU_OPTIONS, fix),
            )
        )
    elif per_gpu > ratio:
        notes.append(
            Finding(
                "too_many_cpus",
                f"The job asks for {request.cpus_per_node} CPUs for {request.gpus_per_node} GPU"
                f"{'s' if request.gpus_per_node > 1 else ''}, more than {cluster.name}'s "
                f"{ratio} per GPU: the node's other GPUs are left short of CPUs, and the job "
                "waits for a node with that many free.",
                rule.source,
                "cpus_per_task",
                severity=Severity.WASTES,
                lines=lines,
                fix=f"Ask for {fix} ({ratio} per GPU), unless the program truly needs more.",
                edits=set_directive(script, CPU_OPTIONS, fix),
            )
        )
