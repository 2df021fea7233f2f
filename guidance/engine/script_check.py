"""Check my script: read a pasted sbatch script the way sbatch does and apply a cluster's guidance.

Pure Python like the rest of the engine, and it never raises: whatever the text, the answer is a
`ScriptCheck` with the notes and the #SBATCH options sbatch would read.

What is certain (how sbatch reads #SBATCH lines, Slurm's time formats) follows Slurm exactly.
What a script *does* is guessed from its words, and each guess is written down where it is made:
a note is only raised when the script shows the problem, so a quiet answer is no guarantee.
"""

import math
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise

from guidance.engine import sources
from guidance.engine.notes import describe_hours
from guidance.engine.slurm_time import format_time, parse_seconds
from guidance.engine.sources import Source
from guidance.engine.types import Cluster, Note, Scheduler, StorageTier, TierKind

# Nobody writes a 200 kB job script; the cap keeps the page fast whatever is pasted.
MAX_CHARS = 200_000


@dataclass(frozen=True)
class Directive:
    """One option of an #SBATCH line: `option` is the long name ("time"), `value` as written."""

    line: int
    option: str
    value: str | None

    def __str__(self) -> str:
        dashes = "" if self.option.startswith("-") else "--"
        return f"{dashes}{self.option}" + ("" if self.value is None else f"={self.value}")


@dataclass(frozen=True)
class Script:
    shebang: bool
    directives: tuple[Directive, ...]
    # #SBATCH lines sbatch skips: (line number, text, why).
    ignored: tuple[tuple[int, str, str], ...]
    # The shell lines, continuations joined, whole-line comments left out.
    commands: tuple[str, ...]

    def option(self, *names: str) -> str | None:
        """The value sbatch uses: the last one given under any of the names."""
        found = [d for d in self.directives if d.option in names]
        return found[-1].value if found else None

    def has(self, *names: str) -> bool:
        return any(d.option in names for d in self.directives)


@dataclass(frozen=True)
class ScriptCheck:
    notes: tuple[Note, ...]
    directives: tuple[Directive, ...] = ()
    truncated: bool = False


# --- How sbatch reads the script ---------------------------------------------------------

# sbatch's short options that take a value, by their long names.
SHORT_WITH_VALUE = {
    "A": "account",
    "a": "array",
    "b": "begin",
    "C": "constraint",
    "c": "cpus-per-task",
    "D": "chdir",
    "d": "dependency",
    "e": "error",
    "F": "nodefile",
    "G": "gpus",
    "i": "input",
    "J": "job-name",
    "L": "licenses",
    "M": "clusters",
    "m": "distribution",
    "N": "nodes",
    "n": "ntasks",
    "o": "output",
    "p": "partition",
    "q": "qos",
    "S": "core-spec",
    "t": "time",
    "w": "nodelist",
    "x": "exclude",
}
SHORT_FLAGS = {
    "H": "hold",
    "h": "help",
    "k": "no-kill",
    "O": "overcommit",
    "Q": "quiet",
    "s": "oversubscribe",
    "u": "usage",
    "V": "version",
    "v": "verbose",
    "W": "wait",
}
# Long options without a value, or whose value must follow "=" (getopt's optional arguments).
LONG_FLAGS = frozenset(
    {
        "contiguous",
        "exclusive",
        "get-user-env",
        "help",
        "hold",
        "ignore-pbs",
        "no-kill",
        "no-requeue",
        "overcommit",
        "oversubscribe",
        "parsable",
        "quiet",
        "reboot",
        "requeue",
        "spread-job",
        "test-only",
        "usage",
        "use-min-nodes",
        "verbose",
        "version",
        "wait",
    }
)


def parse_script(text: str) -> Script:
    """sbatch's reading: #SBATCH lines count until the first line that is neither blank nor a
    comment; an #SBATCH must start the line. The rest is the shell script."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    directives: list[Directive] = []
    ignored: list[tuple[int, str, str]] = []
    commands: list[str] = []
    in_header = True
    pending = ""
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if in_header and line.startswith("#SBATCH"):
            directives.extend(_options(_arguments(line[len("#SBATCH") :]), number))
            continue
        if stripped.startswith("#SBATCH"):
            why = "it is indented" if in_header else "it comes after a command"
            ignored.append((number, stripped, why))
            continue
        if pending:
            line = f"{pending} {line.strip()}"
            pending = ""
        elif not stripped or stripped.startswith("#"):
            continue
        in_header = False
        if line.rstrip().endswith("\\"):
            pending = line.rstrip()[:-1].rstrip()
            continue
        commands.append(line.strip())
    if pending.strip():
        commands.append(pending.strip())
    return Script(
        shebang=bool(lines) and lines[0].startswith("#!"),
        directives=tuple(directives),
        ignored=tuple(ignored),
        commands=tuple(commands),
    )


def _arguments(rest: str) -> list[str]:
    """The words of an #SBATCH line as sbatch splits them: quotes and backslashes work, and an
    unquoted '#' ends the line."""
    words: list[str] = []
    word: list[str] = []
    started = False
    quote = ""
    escape = False
    for char in rest:
        if escape:
            word.append(char)
            escape = False
        elif char == "\\":
            escape = started = True
        elif quote:
            if char == quote:
                quote = ""
            else:
                word.append(char)
        elif char in "\"'":
            quote = char
            started = True
        elif char == "#":
            break
        elif char.isspace():
            if started:
                words.append("".join(word))
                word, started = [], False
        else:
            word.append(char)
            started = True
    if started:
        words.append("".join(word))
    return words


def _options(args: list[str], line: int) -> Iterator[Directive]:
    """getopt_long over one line's words (sbatch reads each #SBATCH line on its own)."""
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg.startswith("--") and len(arg) > 2:
            name, eq, value = arg[2:].partition("=")
            if eq or name in LONG_FLAGS:
                yield Directive(line, name, value if eq else None)
            elif i < len(args):
                yield Directive(line, name, args[i])
                i += 1
            else:
                yield Directive(line, name, None)
        elif arg.startswith("-") and len(arg) > 1:
            j = 1
            while j < len(arg):
                letter = arg[j]
                j += 1
                if letter in SHORT_WITH_VALUE:
                    value = arg[j:]
                    if not value and i < len(args):
                        value = args[i]
                        i += 1
                    yield Directive(line, SHORT_WITH_VALUE[letter], value or None)
                    break
                yield Directive(line, SHORT_FLAGS.get(letter, f"-{letter}"), None)
        # A bare word would be taken for the script's name by sbatch: nothing to check.


def parse_time(value: str) -> float | None:
    """Slurm's --time in minutes, seconds rounded up as Slurm does; math.inf for no limit,
    None when sbatch would not accept it."""
    try:
        seconds = parse_seconds(value)
    except ValueError:
        return None
    return seconds if math.isinf(seconds) else math.ceil(seconds / 60)


def _count(value: str) -> int | None:
    match = re.match(r"[0-9]{1,6}", value)
    return int(match.group()) if match else None


def gpu_request(value: str) -> tuple[str | None, int | None]:
    """(type, count) of "[type:]count", as --gpus, --gpus-per-node and --gpus-per-task take."""
    kind, _, count = value.rpartition(":")
    return (kind or None), _count(count)


def gres_gpus(value: str) -> tuple[str | None, int | None]:
    """(type, count) of the GPUs in a --gres list: gpu, gpu:2, gpu:a100:2, gres/gpu:2."""
    for item in value.split(","):
        parts = item.strip().removeprefix("gres/").split(":")
        if parts[0] != "gpu":
            continue
        if len(parts) == 1:
            return None, 1
        if len(parts) == 2:
            count = _count(parts[1])
            return (None, count) if count is not None else (parts[1], 1)
        return parts[1], _count(parts[2])
    return None, None


# --- Reading the shell commands ------------------------------------------------------------

_OPERATORS = frozenset(";&|()<>")


@dataclass(frozen=True)
class _Command:
    words: tuple[str, ...]
    background: bool


def _simple_commands(line: str) -> Iterator[_Command]:
    """The simple commands of a shell line, split at ; && || | & and parentheses."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""  # shlex would start a comment inside a word; bash does not
    try:
        tokens = list(lexer)
    except ValueError:  # an unclosed quote: the plain words will do for a guess
        tokens = line.split()
    words: list[str] = []
    for token in tokens:
        if token.startswith("#"):
            break
        if token and set(token) <= _OPERATORS:
            if words:
                yield _Command(tuple(words), background=token == "&")
            words = []
        else:
            words.append(token)
    if words:
        yield _Command(tuple(words), background=False)


_VARIABLE = re.compile(r"\$\{(\w+)\}|\$(\w+)")
_ASSIGNMENT = re.compile(r"([A-Za-z_]\w*)=(.*)", re.DOTALL)


def _normal_path(path: str) -> str:
    path = _VARIABLE.sub(lambda m: "$" + (m.group(1) or m.group(2)), path)
    if path == "~" or path.startswith("~/"):
        path = "$HOME" + path[1:]
    return path.rstrip("/") or path


class _Shell:
    """Follows the script's own variables (DATA=/project/...), so that "$DATA" reads as a path."""

    # A=$A$A doubles at each line: paths are short, and a cap keeps any script linear.
    MAX_VALUE = 1000

    def __init__(self) -> None:
        self.variables: dict[str, str] = {}

    def expand(self, word: str) -> str:
        def value(m: re.Match) -> str:
            name = m.group(1) or m.group(2)
            return self.variables.get(name, "$" + name)

        return _normal_path(_VARIABLE.sub(value, word))

    def assign(self, command: _Command) -> None:
        words = list(command.words)
        if words and words[0] in ("export", "declare", "local", "readonly"):
            words = [w for w in words[1:] if not w.startswith("-")]
        matches = [_ASSIGNMENT.fullmatch(w) for w in words]
        if not words or not all(matches):
            return  # VAR=x program ...: a one-off environment, not a variable of the script
        for match in matches:
            self.variables[match.group(1)] = self.expand(match.group(2))[: self.MAX_VALUE]


# --- Where a path is: node-local or network storage ----------------------------------------

LOCAL_KINDS = (TierKind.NODE_LOCAL, TierKind.MEMORY)
NETWORK_KINDS = (TierKind.HOME, TierKind.SCRATCH, TierKind.PROJECT, TierKind.NEARLINE)
# Other spellings of a network tier that users write, counted only where the cluster publishes
# a tier of that kind: on the processing cluster $SCRATCH is the node's own SSD, not this.
ALIASES = {
    TierKind.HOME: ("$HOME", "/home"),
    TierKind.SCRATCH: ("/scratch", "$SCRATCH", "$HOME/scratch"),
    TierKind.PROJECT: ("/project", "$PROJECT", "$HOME/projects"),
    TierKind.NEARLINE: ("/nearline", "$NEARLINE", "$HOME/nearline"),
}
# On the node whatever the cluster publishes: the job's temporary directories and RAM disks.
ALWAYS_LOCAL = ("$SLURM_TMPDIR", "$TMPDIR", "/tmp", "/dev/shm", "/localscratch")


@dataclass(frozen=True)
class _Place:
    prefix: str
    local: bool
    tier: StorageTier | None
    alias: bool


def _tier_prefix(path: str) -> str | None:
    """The fixed start of a tier's path: /scratch/$USER -> /scratch, $HOME/projects/def-$X ->
    $HOME/projects; a leading variable such as $SLURM_TMPDIR stays."""
    parts = _normal_path(path.strip()).split("/")
    kept = parts[:1]
    for part in parts[1:]:
        if "$" in part or "<" in part:
            break
        kept.append(part)
    prefix = "/".join(kept)
    return prefix if prefix not in ("", "/") else None


def _places(cluster: Cluster) -> list[_Place]:
    places = []
    for tier in cluster.storage_tiers:
        local = tier.kind in LOCAL_KINDS
        prefix = _tier_prefix(tier.path)
        if prefix:
            places.append(_Place(prefix, local, tier, alias=False))
        if tier.kind in NETWORK_KINDS:
            places += [_Place(a, False, tier, alias=True) for a in ALIASES[tier.kind]]
    places += [_Place(p, True, None, alias=True) for p in ALWAYS_LOCAL]
    # The longest prefix decides; at equal length the cluster's own path beats a usual spelling.
    return sorted(places, key=lambda p: (-len(p.prefix), p.alias))


def _place(path: str, places: list[_Place]) -> _Place | None:
    for place in places:
        if path.startswith(place.prefix):
            rest = path[len(place.prefix) :]
            if not rest or not (rest[0].isalnum() or rest[0] == "_"):
                return place
    return None


# --- What the commands do --------------------------------------------------------------------

# A training program: its name contains one of these (train.py, ./pretrain_lm, finetune.py,
# python -m mypkg.trainer), or it is given one of the subcommands (python main.py fit).
# Inference, evaluation and preprocessing may read from the network (000, "3. Inference"), so
# a data folder named "train" alone does not make a command a training one.
TRAINING_WORDS = ("train", "finetun", "fine_tun", "fine-tun")
SUBCOMMANDS = frozenset({"train", "fit", "finetune", "fine-tune"})
# Commands that copy or unpack data; with a node-local destination (or run in a node-local
# directory) they stage the data. srun itself only starts them (srun --ntasks-per-node=1 tar ...).
STAGING_TOOLS = frozenset(
    {"cp", "rsync", "tar", "unzip", "7z", "7za", "mv", "dd", "unsquashfs", "rclone", "scp"}
    | {"gunzip", "zstd", "pigz"}
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

# What starts one process per GPU, or hands the GPUs to the program: a small list, kept in
# words a user recognizes in the message.
LAUNCHERS = (
    ("torchrun", re.compile(r"\btorchrun\b")),
    ("python -m torch.distributed.run", re.compile(r"\btorch\.distributed\.(run|launch)\b")),
    ("accelerate launch", re.compile(r"\baccelerate\s+launch\b")),
    ("deepspeed", re.compile(r"\bdeepspeed\b")),
    ("horovodrun", re.compile(r"\bhorovodrun\b")),
    ("mpirun or mpiexec", re.compile(r"\bmpi(run|exec)\b")),
    ("srun python", re.compile(r"\bsrun\b[^\n]{0,200}\bpython")),
    ("lightning run", re.compile(r"\blightning\s+run\b")),
    (
        "an option giving the program its GPUs (--devices, --gpus, --nproc_per_node)",
        re.compile(
            r"--(devices|n_?gpus|num_gpus|gpus|nproc[_-]per[_-]node|multi[_-]gpu)\b|\bdevices="
        ),
    ),
    ("GNU parallel", re.compile(r"\bparallel\b|\bxargs\b[^\n]{0,200}\s-P")),
)
# Signs that the work resumes where it stopped; comments do not count.
CHECKPOINT_WORDS = re.compile(r"checkpoint|ckpt|resume|restart|requeue|dmtcp", re.IGNORECASE)


@dataclass
class _Reading:
    """What the commands were seen to do."""

    training: list[tuple[str, _Place]]  # (command, network place it reads) of training runs
    staged: bool = False
    background_runs: int = 0


def _read_commands(script: Script, places: list[_Place]) -> _Reading:
    shell = _Shell()
    reading = _Reading(training=[])
    cwd_local = False
    loops = 0  # a run started in the background inside a loop is several runs
    for line in script.commands:
        for command in _simple_commands(line):
            shell.assign(command)
            first = command.words[0]
            loops += first in ("for", "while", "until")
            loops -= first == "done" and loops > 0
            words = [shell.expand(w) for w in command.words]
            while words and (words[0] in PREFIX_WORDS or _ASSIGNMENT.fullmatch(words[0])):
                words.pop(0)
            if not words:
                continue
            reading.background_runs += command.background * (2 if loops else 1)
            program = words[0].rsplit("/", 1)[-1]
            if program in ("cd", "pushd"):
                where = _place(words[1], places) if len(words) > 1 else None
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


def _is_local(word: str, places: list[_Place]) -> bool:
    # -C$SLURM_TMPDIR and --target=$SLURM_TMPDIR name the destination too.
    candidates = (word, word.partition("=")[2], word[2:] if re.match(r"-\w", word) else "")
    return any((p := _place(c, places)) is not None and p.local for c in candidates if c)


def _is_training(words: list[str]) -> bool:
    """Whether the program run is a training one, by its name: the command, the first script
    it is given, a module after -m, or a subcommand such as "train" or "fit"."""
    names = [words[0]]
    names += [w for w in words if CODE_FILE.search(w)][:1]
    names += [b for a, b in pairwise(words) if a == "-m"][:1]
    if any(w.casefold() in SUBCOMMANDS for w in words[1:]):
        return True
    return any(part in n.rsplit("/", 1)[-1].casefold() for n in names for part in TRAINING_WORDS)


def _network_data(words: list[str], places: list[_Place]) -> _Place | None:
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
        place = _place(word, places)
        if place and not place.local:
            return place
    return None


# --- The checks ----------------------------------------------------------------------------


def check_script(text: str, cluster: Cluster) -> ScriptCheck:
    """The cluster's guidance applied to an sbatch script; never raises."""
    if cluster.scheduler != Scheduler.SLURM:
        return ScriptCheck(
            (
                Note(
                    "not_slurm",
                    f"{cluster.name} runs {cluster.scheduler.label}, not Slurm: it takes no "
                    "sbatch scripts. Submit the work through its own tools; the guidance pages "
                    "still apply.",
                    sources.RUNAI if cluster.scheduler == Scheduler.RUNAI else None,
                ),
            )
        )
    text = text if isinstance(text, str) else ""
    truncated = len(text) > MAX_CHARS
    text = text[:MAX_CHARS]
    script = parse_script(text)
    notes: list[Note] = []
    if truncated:
        notes.append(
            Note(
                "truncated",
                f"The script is longer than {MAX_CHARS // 1000} kB: only its first "
                f"{MAX_CHARS // 1000} kB were checked.",
            )
        )
    if not _check_shape(text, script, notes):
        return ScriptCheck(tuple(notes), script.directives, truncated)
    places = _places(cluster)
    reading = _read_commands(script, places)
    if script.directives:
        minutes = _check_time(script, cluster, notes)
        _check_checkpoints(script, cluster, minutes, notes)
        _check_account(script, notes)
        _check_gpu_types(script, cluster, notes)
    _check_gpu_use(script, reading, notes)
    _check_training_data(cluster, reading, notes)
    return ScriptCheck(tuple(notes), script.directives, truncated)


def _check_shape(text: str, script: Script, notes: list[Note]) -> bool:
    """Whether sbatch would take the text as a batch script at all; False: nothing else to say."""
    if "\x00" in text:
        notes.append(
            Note(
                "not_a_batch_script",
                "This looks like a binary file, not a job script: it contains NUL bytes, and "
                "sbatch refuses those.",
                sources.SBATCH_SCRIPT_RULES,
            )
        )
        return False
    if not script.shebang and not script.directives:
        notes.append(
            Note(
                "not_a_batch_script",
                "This does not look like a batch script: it has neither a first line starting "
                "with #! (e.g. #!/bin/bash) nor any #SBATCH line.",
                sources.SBATCH_SCRIPT_RULES,
            )
        )
        return False
    if not script.shebang:
        notes.append(
            Note(
                "not_a_batch_script",
                "The first line must start with #! and the shell to run, e.g. #!/bin/bash: "
                "sbatch refuses the script otherwise.",
                sources.SBATCH_SCRIPT_RULES,
            )
        )
    if not script.directives:
        notes.append(
            Note(
                "not_a_batch_script",
                "No #SBATCH line: the job gets the cluster's defaults for time, memory and "
                "GPUs (none). If you pass the options on the sbatch command line, write them as "
                "#SBATCH lines at the top of the script to have them checked here.",
                sources.SBATCH_ELEMENTS,
            )
        )
    if "\r\n" in text:
        notes.append(
            Note(
                "dos_line_breaks",
                "The script has Windows (DOS) line breaks, which sbatch refuses: convert it "
                "with dos2unix before submitting.",
                sources.SBATCH_SCRIPT_RULES,
            )
        )
    for number, line, why in script.ignored:
        notes.append(
            Note(
                "ignored_directive",
                f"Line {number}: sbatch ignores \u201c{line[:80]}\u201d because {why}. Put "
                "every #SBATCH line at the very start of a line, above the first command.",
                sources.SBATCH_SCRIPT_RULES,
            )
        )
    return True


def _check_time(script: Script, cluster: Cluster, notes: list[Note]) -> float | None:
    """The job's time limit in minutes, when the script gives a valid one."""
    value = script.option("time")
    if value is None:
        defaults = {p.default_hours for p in cluster.partitions}
        default = (
            f" ({describe_hours(defaults.pop())} on {cluster.name})" if len(defaults) == 1 else ""
        )
        notes.append(
            Note(
                "missing_time",
                "No --time: Slurm then gives the job the partition's default time limit"
                f"{default}, often too short to finish, or its maximum, which keeps the job "
                "waiting longer in the queue. Ask for the time the job needs plus a margin, "
                "e.g. #SBATCH --time=0-03:00.",
                sources.SBATCH_ELEMENTS,
                "time",
            )
        )
        return None
    minutes = parse_time(value)
    if minutes is None:
        notes.append(
            Note(
                "bad_time",
                f"sbatch cannot read --time={value}. Write minutes, MM:SS, HH:MM:SS, D-HH, "
                "D-HH:MM or D-HH:MM:SS, e.g. --time=0-03:00 for three hours.",
                sources.SBATCH_TIME,
                "time",
            )
        )
        return None
    maximum = cluster.max_hours
    if maximum and minutes > maximum * 60:
        chunk = min(cluster.policy.checkpoint_chunk_hours, maximum) or maximum
        asked = _describe_minutes(minutes)
        jobs = "N" if math.isinf(minutes) else str(math.ceil(minutes / (chunk * 60)))
        notes.append(
            Note(
                "over_max_duration",
                f"--time={value} asks for {asked}, over {cluster.name}'s maximum job duration "
                f"of {describe_hours(maximum)}: Slurm will not run it. Make the program save "
                "checkpoints and resume from the latest one, and run the work as a chain of "
                f"{describe_hours(chunk)} jobs, one after another: #SBATCH --array=1-{jobs}%1 "
                f"with --time={format_time(chunk * 3600)}.",
                sources.SBATCH_ELEMENTS,
                "time",
            )
        )
    return minutes


def _describe_minutes(minutes: float) -> str:
    return "no time limit" if math.isinf(minutes) else describe_hours(minutes / 60)


def _check_checkpoints(
    script: Script, cluster: Cluster, minutes: float | None, notes: list[Note]
) -> None:
    chunk = cluster.policy.checkpoint_chunk_hours
    if minutes is None or minutes <= chunk * 60:
        return
    if any(n.code == "over_max_duration" for n in notes):
        return  # that note already asks for checkpoints and a chain
    array = script.option("array") or ""
    signs = (
        array.endswith("%1")
        or script.has("requeue", "signal")
        or any(CHECKPOINT_WORDS.search(c) for c in script.commands)
    )
    if signs:
        return
    notes.append(
        Note(
            "long_without_checkpoints",
            f"The job runs up to {_describe_minutes(minutes)}, longer than "
            f"{describe_hours(chunk)}, and the script shows no checkpoint or resume logic: an "
            "outage or the time limit would lose all the work. Save checkpoints, resume from "
            f"the latest one, and run {describe_hours(chunk)} jobs as a chain "
            "(#SBATCH --array=1-N%1); shorter jobs also start sooner. If the program already "
            "resumes by itself, this is fine.",
            sources.LONG_RUNNING,
            "time",
        )
    )


def _check_account(script: Script, notes: list[Note]) -> None:
    if script.has("account"):
        return
    notes.append(
        Note(
            "no_account",
            "No --account (-A): clusters that bill jobs to an allocation, such as the "
            "federation's, refuse the job or charge your default account. Add e.g. "
            "#SBATCH --account=def-yourgroup (sshare -U lists yours), unless you set "
            "SBATCH_ACCOUNT.",
            sources.SBATCH_ELEMENTS,
            "account",
        )
    )


def _gpu_requests(script: Script) -> Iterator[tuple[str, str, str | None, int | None]]:
    """(option, value, type, count) of each GPU request that sbatch will use."""
    for option in ("gres", "gpus", "gpus-per-node", "gpus-per-task"):
        value = script.option(option)
        if value is None:
            continue
        kind, count = gres_gpus(value) if option == "gres" else gpu_request(value)
        yield option, value, kind, count


def _check_gpu_types(script: Script, cluster: Cluster, notes: list[Note]) -> None:
    if not cluster.gpu_types:
        return
    for option, value, kind, _ in _gpu_requests(script):
        if kind and cluster.gpu_type(kind) is None:
            known = ", ".join(g.name for g in cluster.gpu_types)
            notes.append(
                Note(
                    "gres_type_unknown",
                    f"--{option}={value} asks for GPU type \u201c{kind}\u201d, which "
                    f"{cluster.name} does not publish: Slurm refuses a type it does not know. "
                    f"Its GPU types: {known}.",
                    next((g.source for g in cluster.gpu_types if g.source), None)
                    or sources.PUBLIC_HARDWARE,
                    option,
                )
            )


def _number(value: str | None) -> int:
    count = _count(value) if value else None
    return count or 1


def _gpu_total(script: Script) -> tuple[int, str]:
    """The most GPUs the job may hold, and the option that asks for them."""
    nodes = _number(script.option("nodes"))  # "2-4": at least 2
    tasks = script.option("ntasks")
    per_node_tasks = script.option("ntasks-per-node")
    task_count = _number(tasks) if tasks else _number(per_node_tasks) * nodes
    best = (0, "")
    for option, value, _, count in _gpu_requests(script):
        if count is None:
            continue
        total = {
            "gres": count * nodes,
            "gpus-per-node": count * nodes,
            "gpus-per-task": count * task_count,
        }.get(option, count)
        if total > best[0]:
            best = (total, f"--{option}={value}")
    return best


def _check_gpu_use(script: Script, reading: _Reading, notes: list[Note]) -> None:
    gpus, asked = _gpu_total(script)
    if gpus <= 1:
        return
    commands = "\n".join(script.commands)
    if reading.background_runs >= 2 or any(p.search(commands) for _, p in LAUNCHERS):
        return
    launchers = ", ".join(name for name, _ in LAUNCHERS[:7])
    notes.append(
        Note(
            "multi_gpu_without_launcher",
            f"{asked} asks for {gpus} GPUs, but the script starts no multi-GPU launcher "
            f"({launchers}). PyTorch and TensorFlow use one GPU by default: the other "
            f"{gpus - 1} would sit idle, yet count against your allocation and make the job "
            "wait longer. Ask for one GPU, or start the program with a launcher (e.g. torchrun "
            "--nproc_per_node) if it can use several; if it spawns its own workers per GPU, "
            "this is fine.",
            sources.SBATCH_ELEMENTS,
            "gpus",
        )
    )


def _check_training_data(cluster: Cluster, reading: _Reading, notes: list[Note]) -> None:
    local = cluster.tier(TierKind.NODE_LOCAL, TierKind.MEMORY)
    if local is None or reading.staged or not reading.training:
        return
    command, place = reading.training[0]
    where = f"{place.tier.name}, " if place.tier else ""
    notes.append(
        Note(
            "training_from_network",
            f"\u201c{command[:120]}\u201d reads its training data from {place.prefix} ({where}"
            "shared network storage), and the script copies nothing to the node's local "
            "storage first. Training from the network is slow and loads the shared filesystem for "
            f"everybody: copy or unpack the data to {local.path or local.name} at the start of "
            "the job (rsync, cp, or tar xf ... -C) and train from there.",
            _training_source(local),
        )
    )


def _training_source(local: StorageTier) -> Source:
    # The processing cluster's own rule (000) where its node-local scratch is the tier; the
    # federation's dataset tiers (001) elsewhere.
    if local.source and local.source.document == sources.DOC_PROCESSING:
        return sources.PROCESSING_TRAINING
    return sources.DATASET_SIZE_TIERS
