"""How sbatch reads a script: its #SBATCH options, and the values of the options checked.

This part is certain: it follows sbatch and Slurm's time formats exactly.
"""

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

from guidance.engine.script_check.sbatch_options import closest, resolve
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
class Refused:
    """Something on an #SBATCH line that makes sbatch refuse the script."""

    line: int
    written: str  # as in the script: --tim=1:00:00
    code: str  # unknown_option or missing_value
    why: str  # the end of a sentence: "sbatch knows no option --tim ..."
    # The options it could be meant for: --tim -> time, time-min; --mem= -> mem.
    meant: tuple[str, ...] = ()


@dataclass(frozen=True)
class Script:
    shebang: bool
    directives: tuple[Directive, ...]
    # #SBATCH lines sbatch skips: (line number, text, why).
    ignored: tuple[tuple[int, str, str], ...]
    # The shell lines, continuations joined, whole-line comments left out.
    commands: tuple[str, ...]
    # The number of each command's first line in the script.
    command_lines: tuple[int, ...] = ()
    refused: tuple[Refused, ...] = ()
    # Options on #SBATCH lines that are commented out (##SBATCH, # SBATCH): not read by sbatch.
    commented: tuple[Directive, ...] = ()
    # Every line as written, for fixes that change one.
    lines: tuple[str, ...] = ()
    # The text of here-documents given to programs other than a shell (python - <<EOF).
    embedded: str = ""

    def line(self, number: int) -> str:
        return self.lines[number - 1] if 0 < number <= len(self.lines) else ""

    def given(self, *names: str) -> Directive | None:
        """The option sbatch uses: the last one given under any of the names."""
        return next((d for d in reversed(self.directives) if d.option in names), None)

    def option(self, *names: str) -> str | None:
        """The value sbatch uses."""
        found = self.given(*names)
        return found.value if found else None

    def numbered_commands(self) -> Iterator[tuple[int, str]]:
        """Each command with the number of its first line."""
        yield from zip(self.command_lines, self.commands, strict=False)

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
    "B": "extra-node-info",
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
    refused: list[Refused] = []
    commented: list[Directive] = []
    ignored: list[tuple[int, str, str]] = []
    commands: list[str] = []
    command_lines: list[int] = []
    in_header = True
    pending = ""
    embedded: list[str] = []
    heredoc: tuple[str, bool, bool] | None = None  # (end word, tabs stripped, shell lines)
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if heredoc is not None:
            end, tabs, shell = heredoc
            if (line.lstrip("\t") if tabs else line) == end:
                heredoc = None
                continue
            if not shell:
                embedded.append(line)
                continue
        if in_header and line.startswith("#SBATCH"):
            directives.extend(_options(_arguments(line[len("#SBATCH") :]), number, refused))
            continue
        if stripped.startswith("#SBATCH"):
            why = "it is indented" if in_header else "it comes after a command"
            ignored.append((number, stripped, why))
            continue
        if in_header and (off := COMMENTED_OUT.match(line)):
            commented.extend(_options(_arguments(line[off.end() :]), number, []))
        if pending:
            line = f"{pending} {line.strip()}"
            pending = ""
        elif not stripped or stripped.startswith("#"):
            continue
        else:
            command_lines.append(number)
        in_header = False
        if line.rstrip().endswith("\\"):
            pending = line.rstrip()[:-1].rstrip()
            continue
        commands.append(line.strip())
        if match := HEREDOC.search(line):
            shell = bool(SHELL_READS_HEREDOC.search(line))
            heredoc = (match.group(2), match.group(1) == "-", shell)
    if pending.strip():
        commands.append(pending.strip())
    return Script(
        shebang=bool(lines) and lines[0].startswith("#!"),
        directives=tuple(directives),
        ignored=tuple(ignored),
        commands=tuple(commands),
        command_lines=tuple(command_lines),
        refused=tuple(refused),
        commented=tuple(commented),
        lines=tuple(lines),
        embedded="\n".join(embedded),
    )


# A here-document: the lines up to its end word are the command's input. Given to a shell
# (srun bash <<EOF) they are commands too; given to anything else (python - <<EOF), they are
# that program's text, which the checker reads only for signs of what the program does.
HEREDOC = re.compile(r"<<(-?)\s*['\"]?(\w+)['\"]?")
SHELL_READS_HEREDOC = re.compile(r"\b(bash|sh|zsh)\b[^<|;&]*<<")


# ##SBATCH, # SBATCH, #-SBATCH: the usual ways of switching an option off.
COMMENTED_OUT = re.compile(r"\s*#+[\s#-]*SBATCH\b(?<!^#SBATCH)")


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


def _options(args: list[str], line: int, refused: list[Refused]) -> Iterator[Directive]:
    """getopt_long over one line's words (sbatch reads each #SBATCH line on its own); what
    sbatch would refuse goes to `refused`."""
    i = 0
    empty = ""  # an option just given "=" and nothing: the next word is what was meant
    while i < len(args):
        arg = args[i]
        i += 1
        if arg.startswith("--") and len(arg) > 2:
            written, eq, value = arg[2:].partition("=")
            name, could_be = resolve(written)
            empty = ""
            if name is None:
                meant = could_be or tuple(filter(None, [closest(written)]))
                refused.append(
                    Refused(line, arg, "unknown_option", _unknown(written, could_be), meant)
                )
                continue
            if eq or name in LONG_FLAGS:
                if eq and not value and name not in LONG_FLAGS:
                    empty = arg
                    refused.append(
                        Refused(line, arg, "missing_value", f"--{name} has no value", (name,))
                    )
                    continue
                yield Directive(line, name, value if eq else None)
            elif i < len(args):
                yield Directive(line, name, args[i])
                i += 1
            else:
                refused.append(
                    Refused(line, arg, "missing_value", f"--{name} has no value", (name,))
                )
        elif arg.startswith("-") and len(arg) > 1:
            empty = ""
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
                if letter not in SHORT_FLAGS:
                    refused.append(
                        Refused(line, arg, "unknown_option", f"sbatch has no option -{letter}")
                    )
                    break
                yield Directive(line, SHORT_FLAGS[letter], None)
        elif empty:
            # "--mem= 150G": the space ends the option, and sbatch refuses the empty value.
            refused[-1] = Refused(
                line,
                f"{empty} {arg}",
                "missing_value",
                f"the space after \u201c=\u201d leaves {empty.rstrip('=')} with no value: "
                f"sbatch reads an empty value and then the stray word \u201c{arg}\u201d",
                refused[-1].meant,
            )
            empty = ""
        else:
            refused.append(
                Refused(line, arg, "unknown_option", f"\u201c{arg}\u201d is not an option")
            )


def _unknown(written: str, could_be: tuple[str, ...]) -> str:
    if could_be:
        options = " or ".join(f"--{o}" for o in could_be[:4])
        return f"--{written} is ambiguous: it could be {options}, so sbatch refuses it"
    meant = closest(written)
    return f"sbatch knows no option --{written}" + (f" (--{meant}?)" if meant else "")


def parse_time_limit(value: str) -> float | None:
    """Slurm's --time in minutes, seconds rounded up as Slurm does; math.inf for no limit,
    None when sbatch would not accept it."""
    try:
        seconds = parse_seconds(value)
    except ValueError:
        return None
    return seconds if math.isinf(seconds) else math.ceil(seconds / 60)


def read_count(value: str | None, default: int | None = None) -> int | None:
    """The count a value starts with ("2-4": 2), `default` when it starts with none."""
    match = re.match(r"[0-9]{1,6}", value or "")
    return int(match.group()) if match else default


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
