"""What the script's commands do: which run training, on what data, and which stage data.

A guess from the commands' words: each guess is written down where it is made.
"""

import re
from dataclasses import dataclass
from itertools import pairwise

from guidance.engine.archives import ARCHIVE_FORMATS
from guidance.engine.script_check.parse import Script
from guidance.engine.script_check.paths import Place, place_of
from guidance.engine.script_check.shell_lines import ASSIGNMENT, Shell, simple_commands

# A training program: its name contains one of these (train.py, ./pretrain_lm, finetune.py,
# python -m mypkg.trainer), or it is given one of the subcommands (python main.py fit).
# Inference, evaluation and preprocessing may read from the network (000, "3. Inference"), so
# a data folder named "train" alone does not make a command a training one.
TRAINING_WORDS = ("train", "finetun", "fine_tun", "fine-tun")
SUBCOMMANDS = frozenset({"train", "fit", "finetune", "fine-tune"})
# Commands that copy or unpack data (every archive the portal accepts, and squashfs images);
# with a node-local destination (or run in a node-local directory) they stage the data. srun
# itself only starts them (srun --ntasks-per-node=1 tar ...).
STAGING_TOOLS = frozenset(
    {"cp", "rsync", "mv", "dd", "rclone", "scp", "unsquashfs"}
    | {tool for archive in ARCHIVE_FORMATS for tool in archive.unpackers}
)
# First words that run no training program even when "train" is among their arguments.
NOT_PROGRAMS = frozenset(
    {"echo", "printf", "cd", "pushd", "mkdir", "export", "source", ".", "module", "ml", "set"}
    | {"unset", "[", "[[", "test", "ls", "rm", "cat", "head", "tail", "find", "grep", "wc", "du"}
    | {"df", "sleep", "wait", "trap", "exit", "return", "local", "declare", "pip", "pip3"}
    | {"virtualenv", "conda", "mamba", "git", "touch", "chmod", "ln", "sed", "awk", "tee"}
    | {"scontrol", "sacct", "squeue", "seff", "nvidia-smi", "date", "hostname", "wget", "curl"}
)
# Words that only start the real command.
PREFIX_WORDS = frozenset(
    {"if", "then", "elif", "else", "do", "while", "until", "!", "time", "nohup", "exec"}
)
# Options whose value is written, or read once, rather than the training data itself.
NOT_DATA_OPTION = re.compile(
    r"out|save|checkpoint|ckpt|log|write|result|export|resume|load|config|cfg|model|weight"
    r"|pretrain|cache|tokenizer|dest|report|wandb|tensorboard",
    re.IGNORECASE,
)
CODE_FILE = re.compile(r"\.(py|sh|bash|r|jl|ipynb|ya?ml|json|toml|cfg|ini|conf|txt)$", re.I)


@dataclass
class Reading:
    """What the commands were seen to do."""

    training: list[tuple[str, Place]]  # (command, network place it reads) of training runs
    staged: bool = False
    background_runs: int = 0


def read_commands(script: Script, places: list[Place]) -> Reading:
    shell = Shell()
    reading = Reading(training=[])
    cwd_local = False
    loops = 0  # a run started in the background inside a loop is several runs
    for line in script.commands:
        for command in simple_commands(line):
            shell.assign(command)
            first = command.words[0]
            loops += first in ("for", "while", "until")
            loops -= first == "done" and loops > 0
            words = [shell.expand(w) for w in command.words]
            while words and (words[0] in PREFIX_WORDS or ASSIGNMENT.fullmatch(words[0])):
                words.pop(0)
            if not words:
                continue
            reading.background_runs += command.background * (2 if loops else 1)
            program = words[0].rsplit("/", 1)[-1]
            if program in ("cd", "pushd"):
                where = place_of(words[1], places) if len(words) > 1 else None
                cwd_local = bool(where and where.local)
            if {w.rsplit("/", 1)[-1] for w in words} & STAGING_TOOLS:
                reading.staged |= cwd_local or any(_is_local(w, places) for w in words[1:])
                continue
            if program in NOT_PROGRAMS or not _is_training(words):
                continue
            network = _network_data(words, places)
            if network:
                reading.training.append((" ".join(command.words), network))
    return reading


def _is_local(word: str, places: list[Place]) -> bool:
    # -C$SLURM_TMPDIR and --target=$SLURM_TMPDIR name the destination too.
    candidates = (word, word.partition("=")[2], word[2:] if re.match(r"-\w", word) else "")
    return any((p := place_of(c, places)) is not None and p.local for c in candidates if c)


def _is_training(words: list[str]) -> bool:
    """Whether the program run is a training one, by its name: the command, the first script
    it is given, a module after -m, or a subcommand such as "train" or "fit"."""
    names = [words[0]]
    names += [w for w in words if CODE_FILE.search(w)][:1]
    names += [b for a, b in pairwise(words) if a == "-m"][:1]
    if any(w.casefold() in SUBCOMMANDS for w in words[1:]):
        return True
    return any(part in n.rsplit("/", 1)[-1].casefold() for n in names for part in TRAINING_WORDS)


def _network_data(words: list[str], places: list[Place]) -> Place | None:
    """The network storage that a training command's data arguments point at, if any."""
    option = ""
    for word in words[1:]:
        if option == "-m":  # python -m package.module: a module name, not a path
            option = ""
            continue
        name, eq, value = word.partition("=")
        if eq and (word.startswith("-") or re.fullmatch(r"[\w.\-]+", name)):
            option, word = name, value  # --data=/x, data.path=/x
        elif word.startswith("-"):
            option = word
            continue
        skip = NOT_DATA_OPTION.search(option) or CODE_FILE.search(word)
        option = ""
        if skip:
            continue
        place = place_of(word, places)
        if place and not place.local:
            return place
    return None
