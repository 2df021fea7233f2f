"""The shell lines of a script: their simple commands, and the variables the script sets."""

import difflib
import re
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from guidance.engine.shell import ALWAYS_SET, SLURM_JOB_VARIABLES

_OPERATORS = frozenset(";&|()<>")
# Set in every job besides Slurm's own (SLURM_*): the login's environment, which sbatch passes on.
# The sites' storage variables ($SCRATCH, $PROJECT) come from the cluster's facts.
SET_IN_JOB = ALWAYS_SET | SLURM_JOB_VARIABLES | {"PWD", "OLDPWD", "PATH", "LOGNAME", "HOSTNAME"}


@dataclass(frozen=True)
class Command:
    words: tuple[str, ...]
    background: bool


def simple_commands(line: str) -> Iterator[Command]:
    """The simple commands of a shell line, split at ; && || | & and parentheses. A redirection's
    target stays a word of its command: xz -dc d.tar.xz > "$SLURM_TMPDIR"/d.tar writes there."""
    for step in steps(line):
        if isinstance(step, Command):
            yield step


def steps(line: str) -> Iterator[Command | str]:
    """The simple commands of a shell line, with "(" and ")" where a subshell starts and ends:
    ( cd x && tar xf y ), $(cd x; pwd) and <(...) run their commands in one."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""  # shlex would start a comment inside a word; bash does not
    try:
        tokens = list(lexer)
    except ValueError:  # an unclosed quote: the plain words will do for a guess
        tokens = line.split()
    words: list[str] = []
    array = False  # inside NAME=( ... ): the array's items, no subshell
    for token in tokens:
        if array:
            array = token != ")"
            words[-1] += ("" if words[-1].endswith("(") or not array else " ") + token
            continue
        if token.startswith("#"):
            break
        if _is_redirection(token):
            continue
        if token == "(" and words and ASSIGNMENT.fullmatch(words[-1]) and words[-1][-1] == "=":
            words[-1] += "("
            array = True
            continue
        if token and set(token) <= _OPERATORS:
            if words:
                yield Command(tuple(words), background=token == "&")
            words = []
            # (( )) is arithmetic and () a function's: both close on their own line.
            if token.count("(") != token.count(")"):
                yield from "(" * token.count("(") + ")" * token.count(")")
        else:
            words.append(token)
    if words:
        yield Command(tuple(words), background=False)


def _is_redirection(token: str) -> bool:
    # > >> < &> 2>&1's >& and >|, but not a process substitution's <( or >(.
    return set(token) <= _OPERATORS and bool(set(token) & set("<>")) and "(" not in token


_VARIABLE = re.compile(r"\$\{(\w+)\}|\$(\w+)")
# ${X:-default}, ${X-default}, ${X:=default} and ${X:+other}: bash's defaults, with what they
# hold (which may name variables itself, but holds no braces).
_DEFAULT = re.compile(r"\$\{(\w+)(:?[-=+])([^{}]*)\}")
ASSIGNMENT = re.compile(r"([A-Za-z_]\w*)=(.*)", re.DOTALL)


def normal_path(path: str) -> str:
    path = _VARIABLE.sub(lambda m: "$" + (m.group(1) or m.group(2)), path)
    if path == "~" or path.startswith("~/"):
        path = "$HOME" + path[1:]
    return path.rstrip("/") or path


class Shell:
    """Follows the script's own variables (DATA=/project/...), so that "$DATA" reads as a path,
    and the directory its commands run in. `known`: variables the job has without the script
    setting them (the site's $SCRATCH), besides Slurm's and the login's own."""

    # A=$A$A doubles at each line: paths are short, and a cap keeps any script linear.
    MAX_VALUE = 1000

    def __init__(self, known: Iterable[str] = ()) -> None:
        self.variables: dict[str, str] = {}
        self.known = SET_IN_JOB | set(known)
        # Exported by the script: the programs it starts see them in their environment.
        self.exported: set[str] = set()
        # Where commands run: "" for the directory the job started in (its submission's).
        self.cwd = ""
        self._outer: list[tuple[dict[str, str], set[str], str]] = []

    def is_set(self, name: str) -> bool:
        return name in self.variables or name in self.known or name.startswith("SLURM_")

    def expand(self, word: str) -> str:
        def default(m: re.Match) -> str:
            name, how, other = m.groups()
            if how.endswith("+"):
                return self.expand(other) if self.is_set(name) else ""
            if self.is_set(name):
                return self.variables.get(name, "$" + name)
            value = self.expand(other)
            if how.endswith("="):
                self.variables[name] = value[: self.MAX_VALUE]
            return value

        def value(m: re.Match) -> str:
            name = m.group(1) or m.group(2)
            return self.variables.get(name, "$" + name)

        return normal_path(_VARIABLE.sub(value, _DEFAULT.sub(default, word)))

    def unset_in(self, word: str) -> list[str]:
        """The variables the word names that nothing has set: bash makes each empty."""
        plain = _DEFAULT.sub("", word)
        names = (m.group(1) or m.group(2) for m in _VARIABLE.finditer(plain))
        return [n for n in dict.fromkeys(names) if not n.isdigit() and not self.is_set(n)]

    def meant(self, name: str) -> str | None:
        """The script's own variable an unset name is likely a misspelling of."""
        close = difflib.get_close_matches(name, list(self.variables), n=1, cutoff=0.8)
        return close[0] if close else None

    def assign(self, command: Command) -> None:
        words = list(command.words)
        while words and words[0] in ("while", "until", "if", "then", "do", "else", "!", "{"):
            words.pop(0)
        exporting = bool(words) and words[0] in ("export", "declare", "typeset")
        if words and words[0] in ("export", "declare", "typeset", "local", "readonly"):
            words = [w for w in words[1:] if not w.startswith("-")]
            if exporting:
                self.exported |= {w.partition("=")[0] for w in words}
        elif words and words[0] in ("for", "read", "select"):
            # for f in ...; read -r line: set by the loop or the input, to something unseen.
            names = [w for w in words[1:] if re.fullmatch(r"[A-Za-z_]\w*", w) and w != "in"]
            self.known |= set(names[:1] if words[0] != "read" else names)
            return
        elif words and words[0] == ":":
            for word in words[1:]:
                self.expand(word)  # : ${DATA:=/project/d} sets DATA
            return
        matches = [ASSIGNMENT.fullmatch(w) for w in words]
        if not words or not all(matches):
            return  # VAR=x program ...: a one-off environment, not a variable of the script
        for match in matches:
            self.variables[match.group(1)] = self.expand(match.group(2))[: self.MAX_VALUE]

    def enter(self) -> None:
        """A subshell starts: what it sets and where it goes end with it."""
        self._outer.append((dict(self.variables), set(self.exported), self.cwd))

    def leave(self) -> None:
        if self._outer:  # a case pattern's ")" closes nothing
            self.variables, self.exported, self.cwd = self._outer.pop()

    @property
    def in_subshell(self) -> bool:
        return bool(self._outer)

    def change_directory(self, words: list[str]) -> None:
        """cd or pushd, with `words` expanded; a directory unknown to the script is "?"."""
        where = next((w for w in words[1:] if not w.startswith("-") or w == "-"), "$HOME")
        if where == "-" or "$(" in where or "`" in where:
            where = "?"
        elif not where.startswith(("/", "$", "?")) and self.cwd not in ("", "?"):
            where = f"{self.cwd}/{where}"
        elif not where.startswith(("/", "$")):
            where = "?"
        self.cwd = normal_path(where)
