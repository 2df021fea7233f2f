"""Paths as a shell reads them: a leading ~ or site variable stays live, the rest is literal."""

import re
import shlex

# What an admin-published path or variable value may hold: variables ($SCRATCH, ${USER}), never
# a command, a quote or a space.
SAFE_PATH = re.compile(r"[A-Za-z0-9_./${}-]*")
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MODULE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+/-]{0,99}")

# Paths may start with ~ or one of these variables, as people write them; the rest is literal.
PATH_START = re.compile(r"(~|\$HOME|\$\{HOME\}|\$SCRATCH|\$PROJECT|\$USER|\$SLURM_TMPDIR)(?=/|$)")


def quote(value: str) -> str:
    """`value` as one literal shell word, as shlex quotes it; also quoted when it starts with "=",
    which shellcheck takes for a mistaken comparison after NAME= (NAME==x)."""
    quoted = shlex.quote(value)
    return f"'{value}'" if quoted.startswith("=") else quoted


def split_path(value: str) -> tuple[str, str]:
    """(the variable a path starts with, "HOME" for ~, or ""; the rest, literally)."""
    start = PATH_START.match(value)
    if not start:
        return "", value
    variable = "HOME" if start.group(1) in ("~", "${HOME}") else start.group(1)[1:]
    return variable, value[start.end() :]


def shell_path(value: str) -> str:
    """`value` as one shell word: `$SCRATCH/my data` -> `"$SCRATCH"'/my data'`."""
    variable, rest = split_path(value)
    if not variable:
        return quote(value)
    return f'"${variable}"' + (shlex.quote(rest) if rest else "")


def variable_of(value: str) -> str:
    """The variable a path starts with ("HOME" for ~), or ""."""
    return split_path(value)[0]
