"""CPUs and memory in proportion to GPUs, where the site publishes its share per GPU: a job that
takes more leaves a node's other GPUs without CPUs or memory, one that takes too few CPUs
starves its own GPUs where its program starts more loader workers than it has CPUs (read from
the program, or the command's workers option; else asked), and one that takes the whole node
for a few GPUs idles the rest.

The share is the composer's (guidance.engine.gpu_share), per node type: a request that can land
on several node types takes too much only where it takes too much on all of them, and a fix asks
for the least of their shares, which fits on every one."""

import re
from dataclasses import dataclass

from guidance.engine.code_check.loader_workers import (
    Workers,
    command_workers,
    count_of,
    loader_workers,
)
from guidance.engine.code_check.program import NotPython, Program, parse_program
from guidance.engine.gpu_share import SHARE_TOLERANCE, gpu_share
from guidance.engine.script_check.commands import Reading, Run
from guidance.engine.script_check.findings import (
    Basis,
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


@dataclass(frozen=True)
class Shares:
    """The shares per GPU of the node types a job can land on: the most it may take anywhere,
    and the least, which a fix asks for."""

    most_cpus: int
    least_cpus: int
    most_memory_mb: int
    least_memory_mb: int
    where: str  # "Narval's", "Graham's v100 nodes'": whose share the figures are


def shares(cluster: Cluster, landings) -> Shares:
    """`landings`: the node types the job can land on (node_types)."""
    kinds = tuple(p for p in landings if p.gpus_per_node)
    found = [gpu_share(cluster, p) for p in kinds]
    if not found:
        policy = cluster.policy
        cpus, memory = policy.cpus_per_gpu, policy.memory_per_gpu_mb
        return Shares(cpus, cpus, memory, memory, f"{cluster.name}'s")
    cpus = [s.cpus for s in found]
    memory = [s.memory_mb for s in found]
    where = (
        f"{cluster.name}'s {kinds[0].name} nodes'"
        if len(kinds) == 1 and len(cluster.partitions) > 1
        else f"{cluster.name}'s"
    )
    return Shares(max(cpus), min(cpus), max(memory), min(memory), where)


def check_shares(
    script: Script,
    request: Request,
    cluster: Cluster,
    notes: list,
    reading: Reading,
    program: tuple[Program, ...] = (),
) -> None:
    """`request`: what the job asks for, with as many GPUs as it should (one where another
    finding says the program uses one). `reading`: what the commands do, and `program` the
    files given beside the script that parse: whether few CPUs matter hangs on the loaders."""
    gpus = request.gpus_per_node
    if not gpus:
        return
    kinds = node_types(request, script, cluster)
    node_gpus = min((p.gpus_per_node for p in kinds), default=0)
    share = shares(cluster, kinds)
    if request.whole_node and node_gpus and gpus < node_gpus:
        _whole_node(script, request, cluster, share, node_gpus, notes)
        return
    if request.whole_node:
        return
    _check_memory(script, request, cluster, share, notes)
    _check_cpus(script, request, cluster, share, notes, reading, program)


def _memory_fix(share: Shares, gpus: int) -> str:
    return f"--mem={share.least_memory_mb * gpus}M"


def _cpus_fix(share: Shares, request: Request) -> str:
    per_task = max(1, share.least_cpus * request.gpus_per_node // request.tasks_per_node)
    return f"--cpus-per-task={per_task}"


def _whole_node(
    script: Script, request: Request, cluster: Cluster, share: Shares, node_gpus: int, notes
) -> None:
    how = [d for d in script.directives if d.option == "exclusive"]
    if request.memory_per_node_mb == 0:
        how.append(request.memory)
    rule = cluster.rule(Rule.MEMORY_PER_GPU)
    fix = _memory_fix(share, request.gpus_per_node)
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
            fix=f"Ask for the GPUs' share instead, {fix}, and no --exclusive."
            if rule
            else "Ask for the memory the job needs instead, and no --exclusive.",
            edits=drop_directives(script, ("exclusive",))
            + set_directive(script, MEMORY_OPTIONS, fix)
            if rule
            else (),
        )
    )


def _check_memory(
    script: Script, request: Request, cluster: Cluster, share: Shares, notes: list
) -> None:
    rule = cluster.rule(Rule.MEMORY_PER_GPU)
    memory = request.memory_per_node_mb
    if rule is None or not memory:
        return
    gpus = request.gpus_per_node
    per_gpu = memory / gpus
    if per_gpu <= share.most_memory_mb * SHARE_TOLERANCE:
        return
    fix = _memory_fix(share, gpus)
    notes.append(
        Finding(
            "memory_over_share",
            f"{request.memory} gives "
            + (f"each of the job's {gpus} GPUs" if gpus > 1 else "the job's one GPU")
            + f" {per_gpu:,.0f} MB of memory; {share.where} share is at most "
            f"{share.most_memory_mb:,}M per GPU. The rest of the node's memory belongs to its "
            "other GPUs, which then cannot be given out, and the job waits longer.",
            rule.source,
            "memory",
            severity=Severity.WASTES,
            lines=(request.memory.line,),
            fix=f"Ask for {fix} ({share.least_memory_mb:,}M for "
            + (f"each of its {gpus} GPUs" if gpus > 1 else "its GPU")
            + "), unless the program truly needs more.",
            edits=set_directive(script, MEMORY_OPTIONS, fix),
        )
    )


def _check_cpus(
    script: Script,
    request: Request,
    cluster: Cluster,
    share: Shares,
    notes: list,
    reading: Reading,
    program: tuple[Program, ...],
) -> None:
    rule = cluster.rule(Rule.CPUS_PER_GPU)
    if rule is None:
        return
    gpus = request.gpus_per_node
    per_gpu = request.cpus_per_node / gpus
    lines = tuple(d.line for d in script.directives if d.option in CPU_OPTIONS)
    lines = lines or (request.gpu_requests[-1].line,)
    fix = _cpus_fix(share, request)
    if per_gpu < MIN_CPUS_PER_GPU:
        few = _Few(script, request, share, rule.source, lines)
        found = few.finding(reading, program)
        if found is not None:
            notes.append(found)
    elif per_gpu > share.most_cpus:
        notes.append(
            Finding(
                "too_many_cpus",
                f"The job asks for {request.cpus_per_node} CPUs for {gpus} GPU"
                f"{'s' if gpus > 1 else ''}, more than {share.where} {share.most_cpus} per "
                "GPU: the node's other GPUs are left short of CPUs, and the job waits for a "
                "node with that many free.",
                rule.source,
                "cpus_per_task",
                severity=Severity.WASTES,
                lines=lines,
                fix=f"Ask for {fix} ({share.least_cpus} per GPU), unless the program truly "
                "needs more.",
                edits=set_directive(script, CPU_OPTIONS, fix),
            )
        )


# The launcher's count of processes per task, among the words before the program's file.
PROCESSES = re.compile(r"^--(?:nproc[_-]per[_-]node|num[_-]processes|num[_-]gpus)(?:=(.*))?$")
# Launchers that start one process per GPU unless told otherwise, and those that start one.
PER_GPU_LAUNCHERS = frozenset({"accelerate", "deepspeed"})
PROCESS_LAUNCHERS = PER_GPU_LAUNCHERS | {
    "torchrun",
    "torch.distributed.run",
    "torch.distributed.launch",
}
PYTHON = re.compile(r"(^|/)python[\d.]*$|\.py$")
JOB_WORKERS = "(num_workers=int(os.environ['SLURM_CPUS_PER_TASK']))"


class _Few:
    """Fewer than MIN_CPUS_PER_GPU CPUs per GPU matter only where the program starts more
    data-loading workers than the CPUs: read from the program given beside the script (or
    written on its command line), else from the script's own workers option, else asked."""

    def __init__(self, script: Script, request: Request, share: Shares, source, lines):
        self.script, self.request, self.share = script, request, share
        self.source, self.lines = source, lines
        self.cpus = max(1, request.cpus_per_node // request.tasks_per_node)  # per task

    def finding(self, reading: Reading, program: tuple[Program, ...]) -> Finding | None:
        run = _program_run(reading)
        if run is None:
            return None  # nothing runs: no loader to feed
        words = run.words
        processes = _processes(words, self.request.gpus_per_node)
        given = program or _inline(words)
        if given:
            loaders = loader_workers(given, words)
            most = loaders.most
            if most is not None and (most.count or 0) * processes > self.cpus:
                where = f"{most.file}, line {most.line},"
                basis = Basis.PROGRAM if program else Basis.SCRIPT
                return self._too_few(f"{where} starts", most.count or 0, most.how, processes, basis)
            if loaders.unknown is None:
                return None  # no workers, or as many as the CPUs: nothing to change
        shown = command_workers(words)
        if shown is not None:
            option, value = shown
            count = count_of(value)
            if count is not None:
                if count * processes <= self.cpus:
                    return None
                what = f"\u201c{run.text[:100]}\u201d asks for"
                return self._too_few(what, count, f"{option} {value}", processes, Basis.SCRIPT)
        return self._question(loaders.unknown if given else None)

    def _has(self) -> str:
        request, gpus = self.request, self.request.gpus_per_node
        given = "asks for" if request.cpus_given else "gets (no --cpus-per-task: one per task)"
        return (
            f"The job {given} {request.cpus_per_node} CPU"
            f"{'s' if request.cpus_per_node > 1 else ''} for {gpus} GPU{'s' if gpus > 1 else ''}"
        )

    def _share(self) -> str:
        return (
            "A PyTorch DataLoader wants as many workers as --cpus-per-task; "
            f"{self.share.where} share is {self.share.least_cpus} CPUs per GPU."
        )

    def _too_few(self, what: str, count: int, how: str, processes: int, basis: Basis) -> Finding:
        request = self.request
        needed = count * processes
        most = max(1, self.share.least_cpus * request.gpus_per_node // request.tasks_per_node)
        fix = f"--cpus-per-task={min(needed, most)}"
        each = f" in each of the {processes} processes the launcher starts" if processes > 1 else ""
        cpus = f"{self.cpus} CPU{'s' if self.cpus > 1 else ''}"
        share = f"the {cpus} of each task" if request.tasks_per_node > 1 else f"its {cpus}"
        enough = (
            f"Ask for {fix}, a CPU for each of its {needed} workers"
            if needed <= most
            else f"Ask for {fix}, the most the share allows, and start fewer workers: as many "
            "as the job's CPUs"
        )
        return Finding(
            "too_few_cpus",
            f"{self._has()}, and {what} {count} DataLoader worker{'s' if count > 1 else ''} "
            f"({how}){each}: {needed} workers share {share}, too few to load and decode the "
            f"data, so the GPUs wait for it. {self._share()}",
            self.source,
            "cpus_per_task",
            severity=Severity.WASTES,
            lines=self.lines,
            fix=f"{enough} {JOB_WORKERS}.",
            edits=set_directive(self.script, CPU_OPTIONS, fix),
            basis=basis,
        )

    def _question(self, unknown: Workers | None) -> Finding:
        cpus = self.request.cpus_per_node
        them = "that CPU" if cpus == 1 else f"those {cpus} CPUs"
        fix = _cpus_fix(self.share, self.request)
        if unknown is None:
            asked = (
                "Does the program start DataLoader workers? If it does, they share "
                f"{them} with the training, too few to load and decode the data, and the GPUs "
                "wait for it; a program that keeps its data in memory, or loads it without "
                "workers, needs no more."
            )
            advice = (
                "Give the program beside the script to settle it. If it loads its data with "
                f"workers, ask for {fix} and start as many {JOB_WORKERS}."
            )
        else:
            asked = (
                f"{unknown.file}, line {unknown.line}, starts DataLoader workers "
                f"({unknown.how}), as many as a value the files do not fix: more than "
                f"{cpus} share {them} with the training, too few to load and decode the data, "
                "and the GPUs wait for it."
            )
            advice = f"Ask for {fix} and start as many workers as the job has {JOB_WORKERS}."
        return Finding(
            "too_few_cpus",
            f"{self._has()}. {asked} {self._share()}",
            self.source,
            "cpus_per_task",
            severity=Severity.ADVICE,
            lines=self.lines,
            fix=advice,
            basis=Basis.QUESTION,
        )


def _program_run(reading: Reading) -> Run | None:
    """The command that starts the program: the training run, else the first Python one."""
    training = next((r for r in reading.runs if r.training), None)
    if training is not None:
        return training
    return next((r for r in reading.runs if any(PYTHON.search(w) for w in r.words)), None)


def _processes(words: tuple[str, ...], gpus: int) -> int:
    """The processes a launcher starts per task: its own count, one per GPU where it is a
    variable or the launcher's default, else one."""
    first = next((i for i, w in enumerate(words) if w.endswith(".py")), len(words))
    launchers = {w.rsplit("/", 1)[-1] for w in words[:first]}
    if not launchers & PROCESS_LAUNCHERS:
        return 1  # the program's own options (python train.py --num_gpus 4) start nothing
    for index, word in enumerate(words[:first]):
        found = PROCESSES.match(word)
        if found:
            value = found.group(1)
            if value is None:
                value = words[index + 1] if index + 1 < len(words) else ""
            return int(value) if value.isdigit() and int(value) > 0 else gpus
    return gpus if launchers & PER_GPU_LAUNCHERS else 1


def _inline(words: tuple[str, ...]) -> tuple[Program, ...]:
    """The program written on the command line (`python -c "..."`), where it parses."""
    for index, word in enumerate(words[:-1]):
        if word == "-c" and index and PYTHON.search(words[index - 1]):
            try:
                return (parse_program("the command's program", words[index + 1]),)
            except NotPython:
                return ()
    return ()
