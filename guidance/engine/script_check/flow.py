"""The script as bash runs it: each simple command in order, with the script's variables put
in, the one-off environment it is given (DATA_DIR=$DATA python train.py), the directory it runs
in, and the variables it names that nothing set.

Followed in the order of the lines, as a reader does: a loop runs once, both branches of an if
run, and a function runs where it is written.
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from guidance.engine.script_check.parse import Script
from guidance.engine.script_check.shell_lines import ASSIGNMENT, Command, Shell, steps

# Words that only start the real command ({ starts a group, which runs in the script's shell).
PREFIX_WORDS = frozenset(
    {"if", "then", "elif", "else", "do", "while", "until", "!", "time", "nohup", "exec", "{"}
)


@dataclass(frozen=True)
class Step:
    line: int
    command: Command  # as written
    words: tuple[str, ...]  # expanded; keywords and one-off assignments left out
    env: tuple[tuple[str, str], ...]  # the one-off assignments, expanded
    cwd: str  # the directory it runs in: "" where the job started, "?" unknown
    unset: tuple[str, ...]  # variables its words name that nothing set: bash makes them empty
    # (line, directory) of the last cd that a subshell's end took back: ( cd $SLURM_TMPDIR && ...)
    undone_cd: tuple[int, str] | None = None
    # The script's variables it exports, with their values: the program sees them too.
    exported: tuple[tuple[str, str], ...] = ()
    # Whether the script sources a file of its own, which may set any variable.
    sources_file: bool = False
    # unset name -> the script's variable of a close name: a misspelling (DATSET for DATASET).
    misspelt: tuple[tuple[str, str], ...] = ()

    @property
    def meant(self) -> dict[str, str]:
        return dict(self.misspelt)


def walk(script: Script, known: Iterable[str] = ()) -> Iterator[Step]:
    """Every simple command of the script, in order. `known`: the variables the site sets in
    every job ($SCRATCH, $PROJECT)."""
    shell = Shell(known)
    undone: tuple[int, str] | None = None
    cds: list[tuple[int, str] | None] = []  # per open subshell: its last cd
    sources_file = False
    for number, line in script.numbered_commands():
        for step in steps(line):
            if step == "(":
                shell.enter()
                cds.append(None)
                continue
            if step == ")":
                outer = shell.cwd
                shell.leave()
                cd = cds.pop() if cds else None
                if cd is not None and shell.cwd != outer:
                    undone = cd
                continue
            assert isinstance(step, Command)
            unset = shell.unset_in(" ".join(step.words))
            shell.assign(step)
            words = [shell.expand(w) for w in step.words]
            env = []
            while words and (words[0] in PREFIX_WORDS or ASSIGNMENT.fullmatch(words[0])):
                if match := ASSIGNMENT.fullmatch(words[0]):
                    env.append((match.group(1), match.group(2)))
                words.pop(0)
            if not words:
                continue
            if words[0] in ("cd", "pushd"):
                shell.change_directory(words)
                if cds:
                    cds[-1] = (number, shell.cwd)
            sources_file |= words[0] in ("source", ".") and not _activates(words)
            yield Step(
                number,
                step,
                tuple(words),
                tuple(env),
                shell.cwd,
                tuple(unset),
                undone,
                tuple((n, shell.variables[n]) for n in shell.exported if n in shell.variables),
                sources_file,
                tuple((n, m) for n in unset if (m := shell.meant(n))),
            )


def _activates(words: list[str]) -> bool:
    # source env/bin/activate sets no variable a path would name.
    return len(words) > 1 and words[1].rsplit("/", 1)[-1] in ("activate", "conda.sh")
