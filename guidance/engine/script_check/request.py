"""What a job asks Slurm for on each node: GPUs, CPUs and memory, whichever options say it.

Slurm's own arithmetic: --gres and --gpus-per-node count per node, --gpus for the whole job,
--gpus-per-task per task; memory comes per node (--mem, 0 meaning all of it), per CPU or per
GPU; a task gets one CPU unless --cpus-per-task or --cpus-per-gpu says otherwise.
"""

import math
import re
from dataclasses import dataclass

from guidance.engine.script_check.parse import (
    Directive,
    Script,
    gpu_request,
    gres_gpus,
    read_count,
)
from guidance.engine.types import Cluster, Partition

GPU_OPTIONS = ("gres", "gpus", "gpus-per-node", "gpus-per-task")
MEMORY_OPTIONS = ("mem", "mem-per-cpu", "mem-per-gpu")
# Slurm's sizes: a whole number, a unit (M when none), an optional B: 32000M, 32G, 118GB.
SIZE = re.compile(r"(\d+)([KMGT]?)B?", re.IGNORECASE)
MB_PER_UNIT = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024 * 1024}


def size_mb(value: str) -> float | None:
    """A Slurm memory size in MB (Slurm's M, 1024 K), None when sbatch would refuse it."""
    match = SIZE.fullmatch(value.strip())
    if not match:
        return None
    return int(match.group(1)) * MB_PER_UNIT[match.group(2).upper()]


@dataclass(frozen=True)
class Request:
    nodes: int
    tasks_per_node: int
    cpus_per_node: int
    cpus_given: bool  # --cpus-per-task or --cpus-per-gpu is in the script
    gpus_per_node: int  # 0: no GPU asked for
    gpu_type: str | None
    gpu_requests: tuple[Directive, ...]  # every GPU request, the one sbatch uses last
    memory_per_node_mb: float | None  # None: not given (or unreadable); 0: the whole node
    memory: Directive | None  # the memory option sbatch uses
    exclusive: bool

    @property
    def whole_node(self) -> bool:
        return self.exclusive or self.memory_per_node_mb == 0


def read_request(script: Script) -> Request:
    nodes = read_count(script.option("nodes"), 1)  # "2-4": at least 2
    per_node = script.option("ntasks-per-node", "tasks-per-node")
    tasks = script.option("ntasks")
    tasks_per_node = 1
    if per_node:
        tasks_per_node = read_count(per_node, 1)
    elif tasks:
        tasks_per_node = math.ceil(read_count(tasks, 1) / nodes)
    requests = tuple(d for d in script.directives if d.option in GPU_OPTIONS and _is_gpu(d))
    gpus, kind = 0, None
    if requests:
        used = requests[-1]
        kind, count = (gres_gpus if used.option == "gres" else gpu_request)(used.value or "")
        count = count or 0
        gpus = {
            "gpus": math.ceil(count / nodes),
            "gpus-per-task": count * tasks_per_node,
        }.get(used.option, count)
    cpus_per_gpu = script.option("cpus-per-gpu")
    cpus_per_task = script.option("cpus-per-task")
    if cpus_per_gpu and gpus:
        cpus = read_count(cpus_per_gpu, 1) * gpus
    else:
        cpus = read_count(cpus_per_task, 1) * tasks_per_node
    memory = script.given(*MEMORY_OPTIONS)
    return Request(
        nodes=nodes,
        tasks_per_node=tasks_per_node,
        cpus_per_node=cpus,
        cpus_given=bool(cpus_per_task or cpus_per_gpu),
        gpus_per_node=gpus,
        gpu_type=kind,
        gpu_requests=requests,
        memory_per_node_mb=_memory_per_node(memory, cpus, gpus),
        memory=memory,
        exclusive=script.has("exclusive"),
    )


def _is_gpu(directive: Directive) -> bool:
    if directive.option != "gres":
        return True
    return gres_gpus(directive.value or "") != (None, None)


def _memory_per_node(memory: Directive | None, cpus: int, gpus: int) -> float | None:
    if memory is None or memory.value is None:
        return None
    size = size_mb(memory.value)
    if size is None:
        return None
    if memory.option == "mem-per-cpu":
        return size * cpus
    if memory.option == "mem-per-gpu":
        return size * gpus if gpus else None
    return size


def node_types(request: Request, script: Script, cluster: Cluster) -> tuple[Partition, ...]:
    """The cluster's node types the job could run on: of its GPU type, in its partition."""
    found = cluster.partitions
    if request.gpu_type:
        found = tuple(p for p in found if p.gpu_type.casefold() == request.gpu_type.casefold())
    partition = script.option("partition")
    if partition:
        named = {n.strip() for n in partition.split(",")}
        in_partition = tuple(p for p in found if {p.slurm_partition, p.name} & named)
        found = in_partition or found  # a partition the guidance does not list: any node type
    return found
