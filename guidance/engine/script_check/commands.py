"""What the script's commands do: which run training, on what data, and which stage data.

A guess from the commands' words: each guess is written down where it is made.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise

from guidance.engine.archives import ARCHIVE_FORMATS
from guidance.engine.script_check.flow import Step, walk
from guidance.engine.script_check.parse import Script
from guidance.engine.script_check.paths import Place, fixed_prefix, place_of

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
# Options whose value is written, or read once, rather than the training data itself.
NOT_DATA_OPTION = re.compile(
    r"out|save|checkpoint|ckpt|log|write|result|export|resume|load|config|cfg|model|weight"
    r"|pretrain|cache|tokenizer|dest|report|wandb|tensorboard|exp|run[_-]?dir|work[_-]?dir"
    r"|project|name",
    re.IGNORECASE,
)
CODE_FILE = re.compile(r"\.(py|sh|bash|r|jl|ipynb|ya?ml|json|toml|cfg|ini|conf|txt)$", re.I)


@dataclass(frozen=True)
class Run:
    """A program the script starts: its line, its words (variables expanded), and whether it
    looks like training."""

    line: int
    words: tuple[str, ...]
    training: bool
    background: bool = False
    # The variables the program finds in its environment: exported, or set for this command.
    environment: frozenset[str] = frozenset()

    @property
    def text(self) -> str:
        return " ".join(self.words)


@dataclass
class Reading:
    """What the commands were seen to do."""

    # (line, command, network place it reads, the path as the script's variables make it) of
    # training runs
    training: list[tuple[int, str, Place, str]] = field(default_factory=list)
    # (line, command, node-local path it reads) of training runs
    local_reads: list[tuple[int, str, str]] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    staged: bool = False
    # Where staging put data on the node, and the network places it came from.
    destinations: list[str] = field(default_factory=list)
    sources: list[Place] = field(default_factory=list)
    background_runs: int = 0
    # Staging commands whose source is a variable nothing set.
    empty_sources: list["Unset"] = field(default_factory=list)
    # Training runs that read a relative path outside the node-local folder a subshell's cd
    # staged in.
    outside_subshell: list["OutsideSubshell"] = field(default_factory=list)


@dataclass(frozen=True)
class OutsideSubshell:
    line: int
    command: str
    path: str  # relative, as given
    cwd: str  # where it is read: "" where the job started
    cd_line: int  # the cd that ended with its subshell
    folder: str  # and where it went


@dataclass(frozen=True)
class Unset:
    line: int
    command: str
    name: str
    meant: str | None  # the script's variable of a close name, if one: a misspelling
    written: str  # the script's line, for the fix


def read_commands(script: Script, places: list[Place], known: Iterable[str] = ()) -> Reading:
    """`known`: the variables the site sets in every job, besides Slurm's and the login's; the
    storage variables of `places` ($SCRATCH, $SLURM_TMPDIR) count too."""
    reading = Reading()
    loops = 0  # a run started in the background inside a loop is several runs
    named = {p.prefix[1:] for p in places if re.fullmatch(r"\$\w+", p.prefix)}
    for step in walk(script, named | set(known)):
        first = step.command.words[0]
        loops += first in ("for", "while", "until")
        loops -= first == "done" and loops > 0
        words = list(step.words)
        number, command = step.line, step.command
        reading.background_runs += command.background * (2 if loops else 1)
        program = words[0].rsplit("/", 1)[-1]
        cwd = place_of(step.cwd, places) if step.cwd not in ("", "?") else None
        cwd_local = step.cwd if cwd and cwd.local else ""
        if {w.rsplit("/", 1)[-1] for w in words} & STAGING_TOOLS:
            if _staging(words, places, cwd_local, reading):
                _empty_sources(step, script.line(number), places, reading)
            continue
        if program in NOT_PROGRAMS:
            continue
        inside: list[tuple[str, str]] = []  # the environment a container's program gets
        container = _container_at(words)
        if container is not None:
            inner, inside = _seen_from_outside(words[container:], (*step.exported, *step.env))
            words = words[:container] + inner
        training = _is_training(words)
        environment = frozenset(n for n, _ in (*step.exported, *step.env, *inside))
        reading.runs.append(Run(number, tuple(words), training, command.background, environment))
        if not training:
            continue
        text = " ".join(command.words)
        given = [
            (option, word)
            for option, word in _data_words(words) + _data_variables([*step.env, *inside])
            if word.startswith(("/", "$")) or _looks_like_folder(option, word)
        ]
        if not given:  # read from the environment, if anywhere the script shows
            given = _exported_data(step, places)
        for _, word in given:
            if not word.startswith(("/", "$")):
                if cwd_local:
                    word = f"{cwd_local}/{word.removeprefix('./')}"
                elif _staged_in_subshell(step, places) and reading.staged:
                    cd_line, folder = step.undone_cd
                    outside = OutsideSubshell(number, text, word, step.cwd, cd_line, folder)
                    reading.outside_subshell.append(outside)
                    break
            place = place_of(word, places)
            if place and not place.local:
                reading.training.append((number, text, place, word))
                break
            if place and place.local:
                reading.local_reads.append((number, text, word))
    return reading


# A program's environment variable that names its data: DATA_DIR, DATASET_PATH, IMAGENET_DATA.
DATA_VARIABLE = re.compile(r"data", re.IGNORECASE)
# An option given a folder: --data, --data_dir, --root, --dataset-path, data.path=.
FOLDER_OPTION = re.compile(r"data|dir|root|path|folder", re.IGNORECASE)


def _exported_data(step: Step, places: list[Place]) -> list[tuple[str, str]]:
    """The data folders the script exports, where none of them is on the node: with a copy on
    the node among them (DATA_SOURCE and DATA_PATH), the program is taken to read the copy."""
    exported = _data_variables(step.exported)
    on_node = any((p := place_of(v, places)) and p.local for _, v in exported)
    return [] if on_node else exported


def _staged_in_subshell(step: Step, places: list[Place]) -> bool:
    """Whether a subshell went to the node's local storage, and its end brought the script back."""
    if step.undone_cd is None:
        return False
    went = place_of(step.undone_cd[1], places)
    here = place_of(step.cwd, places)
    return went is not None and went.local and not (here and here.local)


def _data_variables(assigned: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    return [
        (name, value)
        for name, value in assigned
        if DATA_VARIABLE.search(name) and not NOT_DATA_OPTION.search(name)
    ]


def _looks_like_folder(option: str, word: str) -> bool:
    """A relative word that names the data: given to a folder option, or written as a path."""
    return bool(FOLDER_OPTION.search(option)) or "/" in word.rstrip("/")


CONTAINER_TOOLS = frozenset({"apptainer", "singularity"})
CONTAINER_VERBS = frozenset({"exec", "run", "shell"})
# Commands that start another command after options of their own: srun -n 1 apptainer exec ...
LAUNCHERS = frozenset({"srun", "mpirun", "mpiexec", "timeout", "numactl", "taskset"})
# apptainer exec's options that take a value as the next word.
CONTAINER_VALUE_OPTIONS = frozenset(
    {"-B", "--bind", "--mount", "--env", "--env-file", "-H", "--home", "--pwd", "-W"}
    | {"--workdir", "-o", "--overlay", "--security", "--app", "-S", "--scratch"}
)


# The variables apptainer (and singularity before it) reads binds from, as --bind's value, and
# those it hands the program inside without their prefix (APPTAINERENV_DATA_DIR: DATA_DIR).
CONTAINER_BIND = re.compile(r"(APPTAINER|SINGULARITY)_BIND(PATH)?")
CONTAINER_ENV = re.compile(r"(APPTAINER|SINGULARITY)ENV_(\w+)")


def _seen_from_outside(
    words: list[str], settings: Iterable[tuple[str, str]] = ()
) -> tuple[list[str], list[tuple[str, str]]]:
    """The command a container runs (apptainer exec [options] IMAGE command...), with the paths
    it reads through --bind SRC:DST written as SRC: what matters is where the data lives; and
    the environment the program gets (--env, $APPTAINERENV_X), its paths written so too.
    `settings`: the variables the command sees ($APPTAINER_BIND and the like)."""
    binds: list[tuple[str, str]] = []
    passed: list[str] = []
    for name, value in settings:
        if CONTAINER_BIND.fullmatch(name):
            binds += _binds(value)
        elif found := CONTAINER_ENV.fullmatch(name):
            passed.append(f"{found.group(2)}={value}")
    i = 2  # past the tool and its subcommand (exec, run, shell)
    while i < len(words) and words[i].startswith("-"):
        name, eq, value = words[i].partition("=")
        if not eq and name in CONTAINER_VALUE_OPTIONS and i + 1 < len(words):
            value = words[i + 1]
            i += 1
        if name in ("-B", "--bind", "--mount"):
            binds += _binds(value)
        elif name == "--env":
            passed += value.split(",")
        i += 1
    inner = words[i + 1 :]  # after the image
    binds.sort(key=lambda b: -len(b[0]))

    def outside(word: str) -> str:
        name, eq, path = word.rpartition("=")
        for target, source in binds:
            if path == target or path.startswith(target.rstrip("/") + "/"):
                return f"{name}{eq}{source}{path[len(target) :]}"
        return word

    environment = [outside(p).partition("=") for p in passed if "=" in p]
    return [outside(w) for w in inner] or words, [(n, v) for n, _, v in environment]


def _container_at(words: list[str]) -> int | None:
    """Where a container's command starts: the first word, or the first after a launcher
    and its options (srun --ntasks=1 apptainer exec ...); None where no container runs."""
    if words[0].rsplit("/", 1)[-1] in CONTAINER_TOOLS:
        return 0
    if words[0].rsplit("/", 1)[-1] not in LAUNCHERS:
        return None
    for i, word in enumerate(words[1:-1], start=1):
        if word.rsplit("/", 1)[-1] in CONTAINER_TOOLS and words[i + 1] in CONTAINER_VERBS:
            return i
        if not word.startswith("-") and not words[i - 1].startswith("-"):
            return None  # a program of its own, not an option's value: srun python ...
    return None


def _binds(value: str) -> list[tuple[str, str]]:
    """(inside, outside) of each SRC[:DST[:OPTIONS]] of a bind list."""
    pairs = []
    for pair in value.split(","):
        source, _, target = pair.partition(":")
        pairs.append((target.partition(":")[0] or source, source))
    return pairs


def _staging(words: list[str], places: list[Place], cwd_local: str, reading: Reading) -> bool:
    """A copy or an unpacking: where to, and from which network place. True: onto the node."""
    targets = [fixed_prefix(t) or t for w in words[1:] for t in _local_targets(w, places)]
    if cwd_local and not targets:
        targets = [cwd_local]
    if not targets:
        return False
    reading.staged = True
    reading.destinations += targets
    for word in words[1:]:
        place = place_of(word, places)
        if place and not place.local:
            reading.sources.append(place)
    return True


def _empty_sources(step: Step, written_line: str, places: list[Place], reading: Reading) -> None:
    """A staging command whose source names a variable nothing set: bash makes it empty, and
    rsync -a $DATSET/ $SLURM_TMPDIR/ copies / (cp and tar find nothing)."""
    written = step.command.words[len(step.command.words) - len(step.words) :]
    for said, word in zip(written[1:], step.words[1:], strict=True):
        if said.startswith("-") or _local_targets(word, places):
            continue
        for name in step.unset:
            if f"${name}" in said or f"${{{name}}}" in said:
                meant = step.meant.get(name)
                if meant or not step.sources_file:
                    text = " ".join(step.command.words)
                    unset = Unset(step.line, text, name, meant, written_line)
                    reading.empty_sources.append(unset)
                return


def _local_targets(word: str, places: list[Place]) -> list[str]:
    # -C$SLURM_TMPDIR and --target=$SLURM_TMPDIR name the destination too.
    candidates = (word, word.partition("=")[2], word[2:] if re.match(r"-\w", word) else "")
    return [c for c in candidates if c and (p := place_of(c, places)) is not None and p.local]


def _is_training(words: list[str]) -> bool:
    """Whether the program run is a training one, by its name: the command, the first script
    it is given, a module after -m, or a subcommand such as "train" or "fit"."""
    names = [words[0]]
    names += [w for w in words if CODE_FILE.search(w)][:1]
    names += [b for a, b in pairwise(words) if a == "-m"][:1]
    if any(w.casefold() in SUBCOMMANDS for w in words[1:]):
        return True
    return any(part in n.rsplit("/", 1)[-1].casefold() for n in names for part in TRAINING_WORDS)


# The program itself, not its data: python3.11, /home/me/env/bin/python, ~/.local/bin/x.
INTERPRETER = re.compile(r"(^|/)(python[\d.]*|bin/[^/]+)$")


def _data_words(words: list[str]) -> list[tuple[str, str]]:
    """(option, word) of the words of a training command that may name its data: not options'
    values that are written or read once (outputs, configs, checkpoints), not code, not the
    interpreter. The option is "" for a word given on its own."""
    found = []
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
        if not skip and not INTERPRETER.search(word):
            found.append((option, word))
        option = ""
    return found
