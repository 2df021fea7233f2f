"""Which Python program a job runs: read from its script or command, never run.

The job page checks a job's own program; to read it over SSH the portal must first name it from
the words of the command (`python train.py`, `torchrun ... train.py`, `srun python -m pkg.train`).
The script is read as the script checker reads it (guidance.engine.script_check: continuations
joined, comments and #SBATCH lines left out, the script's own variables followed) and each shell
line is split into words with shlex. A program whose path the words do not fix (a variable the
script does not set) is not named: the page then says why it offers no check.
"""

import posixpath
import re
from dataclasses import dataclass

from guidance.engine.code_check.local_imports import is_installed
from guidance.engine.script_check.parse import parse_script
from guidance.engine.script_check.shell_lines import ASSIGNMENT, Shell, simple_commands

# The portal's own scripts keep the user's command in this variable, quoted, and run it with
# bash -c (jobs/compose/script.py; tests/test_code_check_entry.py renders one to hold it to it).
PORTAL_COMMAND = "JOB_COMMAND"
PYTHON = re.compile(r"python[0-9.]*")  # a program's name, not its text: python, python3.11
MODULE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
# Launchers that start a Python file on every GPU: its path is the first word ending in .py.
LAUNCHERS = frozenset({"torchrun", "deepspeed", "accelerate"})
LAUNCHER_MODULES = frozenset({"torch.distributed.run", "torch.distributed.launch"})
# Words that start the real command: shell keywords and programs that run the rest of the line.
PREFIXES = frozenset({"then", "do", "else", "elif", "if", "!", "{", "time", "exec", "nohup"})
WRAPPERS = frozenset(
    {"srun", "env", "mpirun", "mpiexec", "horovodrun", "numactl", "taskset", "nice", "timeout"}
    | {"stdbuf", "uv", "conda", "mamba", "micromamba", "pixi", "poetry", "apptainer"}
    | {"singularity", "xvfb-run", "command"}
)
# Python's own options that take the next word (or the rest of theirs) as a value.
PYTHON_VALUES = frozenset("WX")
SHELLS = frozenset({"bash", "sh", "zsh"})
HOME = "~"
SUBMIT_DIR = "$SLURM_SUBMIT_DIR"  # where sbatch ran: the job's working folder


@dataclass(frozen=True)
class Entry:
    """The program a job runs. `path` is relative to the job's working folder, starts with ~/ for
    the home folder, or is absolute; `root` is the folder Python looks in first for the
    program's own imports (the file's folder, or the working folder for `python -m`)."""

    path: str
    root: str
    command: str  # the command that runs it, as the script has it

    @property
    def name(self) -> str:
        """The path from the root: how findings and the page name the file (train.py)."""
        return relative(self.path, self.root)


def relative(path: str, root: str) -> str:
    return posixpath.relpath(path, root) if root else path


def program_entry(text: str) -> Entry | None:
    """The Python program a job script (or a bare command) runs; None when its words do not
    name one. A program started by a launcher (torchrun, srun, ...) comes first: a script may
    prepare its data with a small Python program before it trains."""
    found = list(_programs(text, cwd=""))
    launched = [entry for entry, by_launcher in found if by_launcher]
    return (launched or [entry for entry, _ in found] or [None])[0]


def _programs(text: str, cwd: str | None, depth: int = 0):
    script = parse_script(text)
    shell = Shell()
    chdir = script.option("chdir")
    if chdir is not None:
        cwd = _folder(cwd, shell.expand(chdir))
    for line in script.commands:
        for command in simple_commands(line):
            shell.assign(command)
            words = [_expand(shell, word) for word in command.words]
            if words and words[0] in ("cd", "pushd"):
                cwd = _folder(cwd, words[1] if len(words) > 1 else HOME)
                continue
            found = _program(words, cwd, " ".join(command.words), depth)
            if found is not None:
                yield found
    portal_command = shell.variables.get(PORTAL_COMMAND)
    if portal_command is not None and depth == 0:
        # The portal's script: the user's command is the program, however it is started.
        yield from _programs(portal_command, cwd, depth + 1)


def _expand(shell: Shell, word: str) -> str:
    """The word with the script's variables in it, keeping a trailing slash: it says a folder."""
    expanded = shell.expand(word)
    return f"{expanded}/" if word.endswith("/") and not expanded.endswith("/") else expanded


def _program(words: list[str], cwd: str | None, said: str, depth: int):
    """(Entry, started by a launcher) for one simple command, or None."""
    launched = False
    while words and (words[0] in PREFIXES or ASSIGNMENT.fullmatch(words[0])):
        words = words[1:]
    while words and _name(words[0]) in WRAPPERS:
        launched |= _name(words[0]) in ("srun", "mpirun", "mpiexec", "horovodrun")
        if _name(words[0]) == "srun":
            cwd = _folder(cwd, _srun_chdir(words)) if _srun_chdir(words) else cwd
        words = _past_wrapper(words)
    if not words:
        return None
    program = _name(words[0])
    if program in SHELLS and len(words) > 2 and words[1] == "-c" and depth < 2:
        found = list(_programs(words[2], cwd, depth + 1))
        return found[0] if found else None
    if program in LAUNCHERS:
        entry = _launched(words, cwd, said)
        return (entry, True) if entry else None
    if PYTHON.fullmatch(program):
        entry, by_launcher = _python(words[1:], cwd, said)
        return (entry, launched or by_launcher) if entry else None
    return None


def _name(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _past_wrapper(words: list[str]) -> list[str]:
    """What a wrapper runs: from the first word that is Python or a launcher (the wrapper's own
    options come before it), or nothing."""
    for i, word in enumerate(words[1:], 1):
        name = _name(word)
        if PYTHON.fullmatch(name) or name in LAUNCHERS or name in SHELLS:
            return words[i:]
    return []


def _srun_chdir(words: list[str]) -> str:
    for i, word in enumerate(words):
        if word.startswith("--chdir="):
            return word.removeprefix("--chdir=")
        if word in ("--chdir", "-D") and i + 1 < len(words):
            return words[i + 1]
        if word.startswith("-D") and len(word) > 2:
            return word[2:]
        if PYTHON.fullmatch(_name(word)) or _name(word) in LAUNCHERS:
            break
    return ""


def _python(args: list[str], cwd: str | None, said: str) -> tuple[Entry | None, bool]:
    """The file python's arguments run (none for -c, stdin or --version), and whether it runs
    through a launcher module (python -m torch.distributed.run)."""
    i = 0
    while i < len(args):
        word = args[i]
        if word == "-" or word.startswith("--"):
            return None, False  # the program comes on stdin, or python only says something
        if not word.startswith("-"):
            return _file(word, cwd, said), False
        for j, letter in enumerate(word[1:], 1):
            value = word[j + 1 :] or (args[i + 1] if i + 1 < len(args) else "")
            if letter == "c":
                return None, False
            if letter == "m":
                if value in LAUNCHER_MODULES:
                    rest = args[i + 1 + (not word[j + 1 :]) :]
                    return _launched(["torchrun", *rest], cwd, said), True
                return _module(value, cwd, said), False
            if letter in PYTHON_VALUES:
                i += not word[j + 1 :]
                break
        i += 1
    return None, False


def _launched(words: list[str], cwd: str | None, said: str) -> Entry | None:
    """The file torchrun, deepspeed or `accelerate launch` starts: the first word ending in .py,
    or the module after -m/--module."""
    args = words[1:]
    if _name(words[0]) == "accelerate":
        if not args or args[0] != "launch":
            return None
        args = args[1:]
    if "--no_python" in args or "--no-python" in args:
        return None
    for i, word in enumerate(args):
        if word in ("-m", "--module") and i + 1 < len(args):
            return _module(args[i + 1], cwd, said)
        if word.endswith(".py") and not word.startswith("-"):
            return _file(word, cwd, said)
    return None


def _file(word: str, cwd: str | None, said: str) -> Entry | None:
    """The file a word names; None for a folder (`python ~`, `python $SLURM_SUBMIT_DIR/`,
    `python code/`, `python .`): Python would run its __main__.py, which the portal does not
    follow, and the page is not to say the job runs a folder."""
    path = _path(cwd, word)
    if path is None or word.endswith("/") or posixpath.basename(path) in ("", ".", "..", HOME):
        return None
    return Entry(path, posixpath.dirname(path), said)


def _module(name: str, cwd: str | None, said: str) -> Entry | None:
    """`python -m pkg.train`: pkg/train.py under the working folder, which is then the root."""
    if not MODULE.fullmatch(name) or is_installed(name) or cwd is None:
        return None
    path = _path(cwd, name.replace(".", "/") + ".py")
    return Entry(path, cwd, said) if path is not None else None


def _folder(cwd: str | None, target: str) -> str | None:
    """The working folder after `cd target`; None once it is not known."""
    return cwd if target == "-" else _path(cwd, target)


def _path(cwd: str | None, word: str) -> str | None:
    """`word` from the working folder `cwd` ("" for the job's own, where sbatch ran), or None
    when a variable the script does not set (or another user's ~name) leaves it unknown."""
    for variable, start in (("$HOME", HOME), (SUBMIT_DIR, "")):
        if word == variable or word.startswith(f"{variable}/"):
            rest = word.removeprefix(variable).lstrip("/")
            return _normal(f"{start}/{rest}" if start else rest)
    unknown = set("$`'\"") & set(word)  # a quote left: the line did not split (an open quote)
    if unknown or not word or (word.startswith("~") and _normal(word).split("/")[0] != HOME):
        return None
    if word.startswith("/") or word.startswith(HOME):
        return _normal(word)
    if cwd is None:
        return None
    return _normal(f"{cwd}/{word}" if cwd else word)


def _normal(path: str) -> str:
    """The path without ./, .. and doubled slashes; "" for the job's working folder itself."""
    path = posixpath.normpath(path) if path else ""
    return "" if path == "." else path
