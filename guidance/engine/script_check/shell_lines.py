"""The shell lines of a script: their simple commands, and the variables the script sets."""

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass

_OPERATORS = frozenset(";&|()<>")


@dataclass(frozen=True)
class Command:
    words: tuple[str, ...]
    background: bool


def simple_commands(line: str) -> Iterator[Command]:
    """The simple commands of a shell line, split at ; && || | & and parentheses. A redirection's
    target stays a word of its command: xz -dc d.tar.xz > "$SLURM_TMPDIR"/d.tar writes there."""
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
        if _is_redirection(token):
            continue
        if token and set(token) <= _OPERATORS:
            if words:
                yield Command(tuple(words), background=token == "&")
            words = []
        else:
            words.append(token)
    if words:
        yield Command(tuple(words), background=False)


def _is_redirection(token: str) -> bool:
    # > >> < &> 2>&1's >& and >|, but not a process substitution's <( or >(.
    return set(token) <= _OPERATORS and bool(set(token) & set("<>")) and "(" not in token


_VARIABLE = re.compile(r"\$\{(\w+)\}|\$(\w+)")
ASSIGNMENT = re.compile(r"([A-Za-z_]\w*)=(.*)", re.DOTALL)


def normal_path(path: str) -> str:
    path = _VARIABLE.sub(lambda m: "$" + (m.group(1) or m.group(2)), path)
    if path == "~" or path.startswith("~/"):
        path = "$HOME" + path[1:]
    return path.rstrip("/") or path


class Shell:
    """Follows the script's own variables (DATA=/project/...), so that "$DATA" reads as a path."""

    # A=$A$A doubles at each line: paths are short, and a cap keeps any script linear.
    MAX_VALUE = 1000

    def __init__(self) -> None:
        self.variables: dict[str, str] = {}

    def expand(self, word: str) -> str:
        def value(m: re.Match) -> str:
            name = m.group(1) or m.group(2)
            return self.variables.get(name, "$" + name)

        return normal_path(_VARIABLE.sub(value, word))

    def assign(self, command: Command) -> None:
        words = list(command.words)
        if words and words[0] in ("export", "declare", "local", "readonly"):
            words = [w for w in words[1:] if not w.startswith("-")]
        matches = [ASSIGNMENT.fullmatch(w) for w in words]
        if not words or not all(matches):
            return  # VAR=x program ...: a one-off environment, not a variable of the script
        for match in matches:
            self.variables[match.group(1)] = self.expand(match.group(2))[: self.MAX_VALUE]
