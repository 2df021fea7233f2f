"""How the user's command starts its processes on the job's nodes, told from the command itself
unless the user said: it decides how many tasks Slurm gives each node, and whether the script
starts the command once on every node or once on the first node only."""

import os.path
import shlex

from guidance.engine import sources
from guidance.engine.notes import Notes
from guidance.engine.types import JobSpec, Launch, LaunchPlan

# Commands that start the program's processes across the job's nodes themselves.
TASK_LAUNCHERS = frozenset({"srun", "mpirun", "mpiexec", "deepspeed", "horovodrun"})
# Launchers that start the processes of one node only: they need one copy on every node.
NODE_LAUNCHERS = ("torchrun", "torch.distributed.run", "torch.distributed.launch", "accelerate")
# Words that run the command after them, as `env X=1 python ...` or `timeout 3h srun ...` do, with
# those of their options that take a value, and how many plain words they take first.
PREFIXES = {
    "env": ({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}, 0),
    "exec": ({"-a"}, 0),
    "time": ({"-f", "--format", "-o", "--output"}, 0),
    "nohup": (set(), 0),
    "command": (set(), 0),
    "stdbuf": ({"-i", "-o", "-e"}, 0),
    "nice": ({"-n", "--adjustment"}, 0),
    "timeout": ({"-s", "--signal", "-k", "--kill-after"}, 1),  # then the duration
}
SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")"})
# Shell words after which a command starts, as after a separator.
KEYWORDS = frozenset({"if", "then", "else", "elif", "while", "until", "do", "{", "!"})
ONE_PER_NODE = frozenset({"--ntasks-per-node=1", "--tasks-per-node=1"})


def plan_launch(spec: JobSpec, notes: Notes) -> LaunchPlan:
    told = spec.launch is not None
    launch = spec.launch if told else launch_of(spec.command)
    source = sources.SBATCH_DIRECTIVES if launch == Launch.NODE else sources.MULTI_GPU_PYTORCH
    plan = LaunchPlan(launch, _reason(launch, told, spec.nodes), told, source)
    if spec.nodes > 1 or spec.multi_gpu:
        notes.tip(
            "distributed_launch",
            f"To start PyTorch on every GPU of every node: `{ready_command(launch)}`. The "
            "script sets MASTER_ADDR (the first node), MASTER_PORT (one of this job's own), "
            "NNODES, GPUS_PER_NODE and WORLD_SIZE"
            + (", and NODE_RANK on each node." if launch == Launch.NODE else "."),
            sources.MULTI_GPU_PYTORCH,
            "command",
        )
    return plan


def launch_of(command: str) -> Launch:
    """What the command's own words say; a command the words cannot tell runs once per node."""
    words = _words(command)
    for start, word in _command_starts(words):
        if word in TASK_LAUNCHERS:
            rest = words[start + 1 : _end_of_command(words, start)]
            if word == "srun" and _one_per_node(rest):
                return Launch.NODE_TASKS
            return Launch.GPU_TASKS
    return Launch.NODE


def _one_per_node(srun_words: list[str]) -> bool:
    """`srun torchrun ...`, `srun bash -c "accelerate launch ..."`, `srun --ntasks-per-node=1`."""
    if ONE_PER_NODE & set(srun_words):
        return True
    # A quoted command (bash -c "...") is one word: look at its words too.
    inner = [part for word in srun_words for part in word.split()]
    return any(_is_node_launcher(word, inner) for word in inner)


def ready_command(launch: Launch) -> str:
    """torchrun across the job's nodes, as each way of starting the command needs it."""
    common = '--nnodes="$NNODES" --nproc_per_node="$GPUS_PER_NODE"'
    if launch == Launch.NODE:
        return (
            f'torchrun {common} --node_rank="$NODE_RANK" --master_addr="$MASTER_ADDR" '
            '--master_port="$MASTER_PORT" train.py'
        )
    # Started by srun, each copy learns its node from the rendezvous, not from a rank.
    return (
        f'srun --ntasks-per-node=1 torchrun {common} --rdzv_id="$SLURM_JOB_ID" '
        '--rdzv_backend=c10d --rdzv_endpoint="$MASTER_ADDR:$MASTER_PORT" train.py'
    )


def _reason(launch: Launch, told: bool, nodes: int) -> str:
    said = "You said that the command" if told else "The command"
    if launch == Launch.GPU_TASKS:
        return (
            f"{said} starts its own tasks (srun, mpirun, deepspeed): the script runs it once, "
            "and Slurm gives each node one task per GPU, with the CPUs of that GPU."
        )
    if launch == Launch.NODE_TASKS:
        return (
            f"{said} starts one launcher per node itself (srun torchrun): the script runs it "
            "once, and Slurm gives each node one task."
        )
    if nodes == 1:
        return (
            "One task: the program (or a launcher such as torchrun) starts its own workers for "
            "the node's GPUs."
        )
    return (
        "One task per node: the script starts the command once on every node (with srun), as "
        "torchrun and accelerate launch need; each copy starts the workers for its node's GPUs."
    )


def _words(command: str) -> list[str]:
    lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote: the words before it still tell
        return command.split()


def _command_starts(words: list[str]):
    """(index, program name) of each simple command, past assignments, keywords and prefixes."""
    expect, skip, values = True, 0, set()
    for i, word in enumerate(words):
        if word in SEPARATORS or (expect and word in KEYWORDS):
            expect, skip, values = True, 0, set()
        elif not expect:
            continue
        elif word.startswith("-"):  # a prefix's option, and its value when it takes one
            skip += word in values
        elif skip:
            skip -= 1
        elif "=" in word:  # NAME=value before the command
            continue
        elif (name := os.path.basename(word)) in PREFIXES:
            values, skip = PREFIXES[name]
        else:
            yield i, name
            expect = False


def _end_of_command(words: list[str], start: int) -> int:
    return next((i for i in range(start, len(words)) if words[i] in SEPARATORS), len(words))


def _is_node_launcher(word: str, rest: list[str]) -> bool:
    name = os.path.basename(word)
    if name == "accelerate":
        return "launch" in rest
    return name in NODE_LAUNCHERS
