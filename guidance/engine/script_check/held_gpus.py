"""GPUs a job holds and cannot use: a container started without them (apptainer exec without
--nv), and a server or keep-alive that waits for a person (JupyterLab, code-server, sleep
infinity) in a batch job that asks for GPUs.

Read from the commands' words, as bash splits them: an echo that mentions jupyter lab starts no
server, and a monitoring loop sent to the background holds nothing.
"""

import re
from dataclasses import dataclass

from guidance.engine import sources
from guidance.engine.notes import describe_hours
from guidance.engine.script_check.commands import (
    CONTAINER_TOOLS,
    CONTAINER_VERBS,
    LAUNCHERS,
    Reading,
)
from guidance.engine.script_check.findings import Edit, Finding, Severity
from guidance.engine.script_check.parse import Script, parse_time_limit
from guidance.engine.script_check.request import Request, node_types
from guidance.engine.script_check.shell_lines import ASSIGNMENT, Command, simple_commands
from guidance.engine.sources import Source
from guidance.engine.types import Cluster, GpuType, Partition, Workload

# No cluster document speaks of containers: that a container sees the node's GPUs only with
# --nv is Apptainer's own manual (as sbatch's own rules cite Slurm's).
APPTAINER_GPUS = Source(
    "Apptainer User Guide", "GPU Support (NVIDIA CUDA & AMD ROCm): NVIDIA GPUs & CUDA (Standard)"
)

# What hands the container the node's GPUs: the flags, or the variables that set them
# (APPTAINER_NV=1 stands for --nv). AMD's --rocm is the same for AMD GPUs.
GPU_FLAGS = frozenset({"--nv", "--nvccli", "--rocm"})
# Programs run outside a container that may be the job's GPU work.
GPU_PROGRAM = re.compile(r"(^|/)(python[\d.]*|torchrun|accelerate|deepspeed)$|\.py$")
GPU_VARIABLES = re.compile(r"\b(APPTAINER|SINGULARITY)_(NV|NVCCLI|ROCM)=\S")
# The word before the subcommand and after it, as written on the script's line: where --nv goes.
VERB_WRITTEN = re.compile(r"\b(apptainer|singularity)((?:\s+-[\w-]+)*\s+)(exec|run|shell)\b")

# Servers that wait for a person to connect: JupyterLab and the classic notebook, VS Code's.
SERVER = re.compile(r"(^|/)(jupyter-(lab|notebook|server)|code-server)$")
SERVER_AFTER = {
    "jupyter": frozenset({"lab", "notebook", "server"}),
    "code": frozenset({"tunnel", "serve-web"}),
}
SERVER_MODULES = frozenset({"jupyterlab", "notebook", "jupyter_server"})
# First words after which the rest is text or an install, not a server being started.
NOT_STARTING = frozenset(
    {"echo", "printf", "pip", "pip3", "module", "ml", "which", "type", "command", "cat", "grep"}
    | {"export", "kill", "pkill", "ls", "mkdir", "rm", "sed", "awk", "ssh", "scp", "rsync"}
)
# Words without which no line starts a container, a server or a keep-alive.
HINTS = re.compile(r"apptainer|singularity|jupyter|notebook|code|sleep|tail|while|until")
# Words that only start the real command, and launchers whose options come before it.
KEYWORDS = frozenset({"then", "do", "else", "time", "nohup", "exec", "!", "env", "stdbuf"})
# A loop that only waits and reports: `while true; do sleep 60; done` keeps the job alive.
ENDLESS = (("true",), (":",), ("[", "1", "]"), ("[[", "1", "]]"), ("[", "true", "]"))
IDLE_BODY = frozenset({"sleep", "echo", "printf", "date", "nvidia-smi", ":", "true", "do"})
SLEEP = re.compile(r"(\d+(?:\.\d+)?)([smhd]?)")
SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
# A server in a job this short holds no more than an interactive job would (002's is 1 h).
SHORT_SESSION_MINUTES = 3 * 60
# A single sleep this long only waits for someone to log in to the node.
KEEP_ALIVE_SECONDS = 3600


def check_held_gpus(
    script: Script, request: Request, reading: Reading, cluster: Cluster, notes: list
) -> None:
    if not request.gpus_per_node:
        return
    # Splitting a line into words is the costly part: only scripts that mention a container,
    # a server or a wait are split (a pasted wall of words stays quick).
    if not any(HINTS.search(line) for line in script.commands):
        return
    commands = list(_commands(script))
    _check_containers(script, commands, request, reading, notes)
    _check_servers(script, commands, request, reading, cluster, notes)


@dataclass(frozen=True)
class _Line:
    number: int
    command: Command
    words: tuple[str, ...]  # the command's words past prefixes (srun and its options, nohup)


def _commands(script: Script):
    for number, line in script.numbered_commands():
        for command in simple_commands(line):
            yield _Line(number, command, _past_prefixes(command.words))


def _past_prefixes(words: tuple[str, ...]) -> tuple[str, ...]:
    """The command a line starts: past keywords, one-off variables and launchers (srun ...)."""
    rest = list(words)
    while rest:
        first = rest[0].rsplit("/", 1)[-1]
        if first in KEYWORDS or ASSIGNMENT.fullmatch(rest[0]):
            rest.pop(0)
        elif first in LAUNCHERS:
            rest.pop(0)
            while rest and (rest[0].startswith("-") or rest[0][:1].isdigit()):
                rest.pop(0)
        else:
            break
    return tuple(rest)


# --- Containers ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Container:
    number: int
    tool: str  # apptainer or singularity
    verb: str
    gpus: bool  # --nv (or --nvccli, --rocm) given


def _container(line: _Line) -> _Container | None:
    words = line.words
    if not words or words[0].rsplit("/", 1)[-1] not in CONTAINER_TOOLS:
        return None
    i = 1
    while i < len(words) and words[i].startswith("-"):  # apptainer's own options: --debug
        i += 1
    if i >= len(words) or words[i] not in CONTAINER_VERBS:
        return None
    options = [w.partition("=")[0] for w in words[i + 1 :] if w.startswith("-")]
    image = next((w for w in words[i + 1 :] if not w.startswith("-")), "")
    if image.startswith("instance://"):
        return None  # the instance got (or did not get) its GPUs when it started
    tool = words[0].rsplit("/", 1)[-1]
    return _Container(line.number, tool, words[i], bool(GPU_FLAGS & set(options)))


def _check_containers(
    script: Script, commands: list[_Line], request: Request, reading: Reading, notes
) -> None:
    if any(GPU_VARIABLES.search(c) for c in script.commands):
        return
    containers = [c for line in commands if (c := _container(line))]
    if not containers or any(c.gpus for c in containers):
        return  # one container gets the GPUs: the others may well be CPU work
    lines = {c.number for c in containers}
    if any(r.line not in lines and _gpu_program(r.words) for r in reading.runs):
        # A program outside the containers may be what uses the GPUs: only a container that
        # trains needs them for sure.
        lines = {r.line for r in reading.runs if r.line in lines and r.training}
        containers = [c for c in containers if c.number in lines]
        if not containers:
            return
    lines = sorted(lines)
    gpus = request.gpus_per_node * request.nodes
    what = "1 GPU" if gpus == 1 else f"{gpus} GPUs"
    tool = containers[0].tool
    edits = tuple(e for n in lines if (e := _with_nv(script, n)))
    notes.append(
        Finding(
            "container_without_gpus",
            f"{tool} {containers[0].verb} without --nv: the container sees no GPU, so the "
            "program in it finds no CUDA device and stops or runs on the CPU, while the job "
            f"holds its {what} for its whole time.",
            APPTAINER_GPUS,
            "gpus",
            severity=Severity.WASTES,
            lines=tuple(lines),
            fix=f"Give the container the job's GPUs: {tool} {containers[0].verb} --nv ... "
            "(the fixed script adds it).",
            edits=edits,
        )
    )


def _gpu_program(words: tuple[str, ...]) -> bool:
    program = _past_prefixes(words)[:1]
    return bool(program) and GPU_PROGRAM.search(program[0]) is not None


def _with_nv(script: Script, number: int) -> Edit | None:
    """The line with --nv after the subcommand; a command continued over several lines has its
    subcommand on one of them."""
    while number <= len(script.lines):
        written = script.line(number)
        if VERB_WRITTEN.search(written):
            return Edit(number, VERB_WRITTEN.sub(r"\1\2\3 --nv", written, count=1))
        if not written.rstrip().endswith("\\"):
            return None
        number += 1
    return None


# --- Servers and keep-alives ----------------------------------------------------------------


def _check_servers(
    script: Script,
    commands: list[_Line],
    request: Request,
    reading: Reading,
    cluster: Cluster,
    notes: list,
) -> None:
    landings = node_types(request, script, cluster)
    if landings and all(_for_debugging(p) for p in landings):
        return  # the node type set aside for debugging and interactive work: what it is for
    work = [r.line for r in reading.runs if not r.background and _gpu_program(r.words)]
    holding = _holding(commands, max(work, default=0))
    if not holding:
        return
    names = list(dict.fromkeys(name for _, name in holding))
    gpus = request.gpus_per_node * request.nodes
    what = "1 GPU" if gpus == 1 else f"{gpus} GPUs"
    minutes = parse_time_limit(script.option("time") or "")
    how_long = (
        f"its whole --time of {describe_hours(minutes / 60)}"
        if minutes and minutes != float("inf")
        else "as long as the job runs"
    )
    scarce = _scarce(cluster, request, landings)
    if not scarce and minutes and minutes <= SHORT_SESSION_MINUTES:
        return  # a session of a few hours: what an interactive job would hold as well
    debug = next((p for p in cluster.partitions if _for_debugging(p)), None)
    message = (
        f"The job starts {_and(names)}, which waits for a person rather than doing work, "
        f"and holds its {what} for {how_long}, idle whenever nobody is at the keyboard."
    )
    if scarce:
        kinds = _and([g.name.upper() for g in scarce])
        named = (request.gpu_type or "").casefold() in {g.name for g in scarce}
        message += (
            f" {cluster.name} asks that its {kinds} GPUs be used only by work that keeps them "
            f"near 100 % busy{'' if named else ', and the job may get one'}."
        )
    notes.append(
        Finding(
            "server_holds_gpus",
            message,
            _source(scarce, debug),
            "gpus",
            severity=Severity.WASTES,
            lines=tuple(sorted({n for n, _ in holding})),
            fix=_instead(debug),
        )
    )


def _for_debugging(partition: Partition) -> bool:
    return bool(partition.purposes & {Workload.DEBUGGING, Workload.INTERACTIVE})


def _scarce(cluster: Cluster, request: Request, landings) -> list[GpuType]:
    """The GPU types the job may get that the site wants near fully used (000: A100, A6000)."""
    kinds = {p.gpu_type.casefold() for p in landings} or {(request.gpu_type or "").casefold()}
    return [g for g in cluster.gpu_types if g.expects_full_utilization and g.name in kinds]


def _source(scarce: list[GpuType], debug: Partition | None) -> Source:
    stated = next((g.source for g in scarce if g.source is not None), None)
    if stated is not None:
        return stated
    if debug is not None and debug.purpose_source is not None:
        return debug.purpose_source
    # 002: try things in an interactive job (salloc) first; batch jobs are for what runs alone.
    return sources.INTERACTIVE_FIRST


def _instead(debug: Partition | None) -> str:
    if debug is not None:
        ask = debug.slurm_partition and f"--partition={debug.slurm_partition}"
        ask = ask or f"--gres=gpu:{debug.gpu_type}:1"
        return (
            f"Work interactively on {debug.name} ({ask}), the GPUs set aside for debugging, "
            "for a few hours at a time; then run the training as a batch script that starts "
            "the program and ends with it (python train.py ...), not from a notebook."
        )
    return (
        "Work interactively in a short interactive job (salloc --gres=gpu:1 --time=1:00:00, "
        "then start the server or try the program there) and end it when done; run the "
        "training as a batch script that starts the program and ends with it."
    )


def _holding(commands: list[_Line], last_work: int) -> list[tuple[int, str]]:
    """(line, what) of each server or keep-alive that keeps the job, and its GPUs, waiting. A
    server sent to the background holds them unless a program runs after it in the foreground
    (`last_work`: the line of the last one): it then dies with the job when that ends. A
    keep-alive in the background holds nothing."""
    found: list[tuple[int, str]] = []
    i = 0
    while i < len(commands):
        line = commands[i]
        loop_end = _endless_loop(commands, i)
        if loop_end is not None:
            if not commands[loop_end].command.background:
                found.append((line.number, "a keep-alive loop"))
            i = loop_end + 1
            continue
        server = _server(line.words)
        if server and not (line.command.background and line.number < last_work):
            found.append((line.number, server))
        elif not server and not line.command.background and (wait := _keep_alive(line.words)):
            found.append((line.number, wait))
        i += 1
    return found


def _server(words: tuple[str, ...]) -> str:
    if not words or words[0].rsplit("/", 1)[-1] in NOT_STARTING or "install" in words:
        return ""
    for i, word in enumerate(words):
        name = word.rsplit("/", 1)[-1]
        after = words[i + 1] if i + 1 < len(words) else ""
        if SERVER.search(word):
            return _server_name(name)
        if after in SERVER_AFTER.get(name, ()):
            return _server_name(f"{name}-{after}")
        if word == "-m" and after in SERVER_MODULES:
            return _server_name(after)
        if word == "-c" and after:  # bash -c 'jupyter lab ...'
            inner = next(simple_commands(after), None)
            return _server(_past_prefixes(inner.words)) if inner else ""
    return ""


def _server_name(name: str) -> str:
    if "code" in name:
        return "a VS Code server"
    if name.endswith("notebook"):
        return "a Jupyter notebook server"
    return "a JupyterLab server"


def _keep_alive(words: tuple[str, ...]) -> str:
    if not words:
        return ""
    if words[0] == "sleep" and len(words) > 1:
        return f"a keep-alive (sleep {words[1]})" if _long_sleep(words[1:]) else ""
    if words[0] == "tail" and "/dev/null" in words and any(w in ("-f", "-F") for w in words):
        return "a keep-alive (tail -f /dev/null)"
    return ""


def _long_sleep(arguments: tuple[str, ...]) -> bool:
    total = 0.0
    for argument in arguments:
        if argument in ("infinity", "inf"):
            return True
        match = SLEEP.fullmatch(argument)
        if not match:
            return False  # $((RANDOM % 60)): a wait the checker cannot size
        total += float(match.group(1)) * SECONDS[match.group(2)]
    return total >= KEEP_ALIVE_SECONDS


def _endless_loop(commands: list[_Line], start: int) -> int | None:
    """The index of the `done` that closes an endless loop at `start` whose body only waits
    and reports (sleep, date, nvidia-smi); None when there is none."""
    words = commands[start].words
    if not words or words[0] not in ("while", "until"):
        return None
    condition = words[1:]
    if not (condition in ENDLESS or (words[0] == "until" and condition == ("false",))):
        return None
    for end in range(start + 1, len(commands)):
        body = commands[end].words
        if body and body[0] == "done":
            return end
        program = next((w for w in body if w != "do"), "do")
        if program.rsplit("/", 1)[-1] not in IDLE_BODY:
            return None
    return None


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"
