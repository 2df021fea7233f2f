"""How sbatch reads a script: its #SBATCH options, and the values of the options checked.

This part is certain: it follows sbatch and Slurm's time formats exactly.
"""

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

from guidance.engine.slurm_time import parse_seconds


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


def parse_time_limit(value: str) -> float | None:
    """Slurm's --time in minutes, seconds rounded up as Slurm does; math.inf for no limit,
    None when sbatch would not accept it."""
    try:
        seconds = parse_seconds(value)
    except ValueError:
        return None
    return seconds if math.isinf(seconds) else math.ceil(seconds / 60)


def read_count(value: str) -> int | None:
    match = re.match(r"[0-9]{1,6}", value)
    return int(match.group()) if match else None


def gpu_request(value: str) -> tuple[str | None, int | None]:
    """(type, count) of "[type:]count", as --gpus, --gpus-per-node and --gpus-per-task take."""
    kind, _, count = value.rpartition(":")
    return (kind or None), read_count(count)


def gres_gpus(value: str) -> tuple[str | None, int | None]:
    """(type, count) of the GPUs in a --gres list: gpu, gpu:2, gpu:a100:2, gres/gpu:2."""
    for item in value.split(","):
        parts = item.strip().removeprefix("gres/").split(":")
        if parts[0] != "gpu":
            continue
        if len(parts) == 1:
            return None, 1
        if len(parts) == 2:
            count = read_count(parts[1])
            return (None, count) if count is not None else (parts[1], 1)
        return parts[1], read_count(parts[2])
    return None, None
