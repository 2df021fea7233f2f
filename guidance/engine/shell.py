"""Paths as a shell reads them: a leading ~ and every $NAME or ${NAME} stay live, the rest is
literal."""

import re
import shlex

# What an admin-published path or variable value may hold: variables ($SCRATCH, ${USER}), never
# a command, a quote or a space.
SAFE_PATH = re.compile(r"[A-Za-z0-9_./${}-]*")
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MODULE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+/-]{0,99}")

# A variable as people write one in a path; bash reads the longest name, and so do we.
VARIABLE_REF = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
HOME_START = re.compile(r"~(?=/|$)")

# Always set in a Slurm job: a path may name them without a check.
ALWAYS_SET = frozenset({"HOME", "USER"})
# Bash's own: what it sets itself (`compgen -v` in a clean shell), some read-only (UID), some
# its own value whatever is assigned (RANDOM, SECONDS, _); and what changes how it runs a script
# when set (GLOBIGNORE hides files from a glob, FUNCNEST limits functions, POSIXLY_CORRECT...).
BASH_OWN = frozenset(
    {"BASHOPTS", "BASHPID", "COMP_WORDBREAKS", "DIRSTACK", "EPOCHREALTIME", "EPOCHSECONDS"}
    | {"EUID", "GROUPS", "HISTCMD", "HOSTNAME", "HOSTTYPE", "IFS", "LINENO", "MACHTYPE"}
    | {"OPTERR", "OPTIND", "OSTYPE", "PATH", "PPID", "PS4", "PWD", "RANDOM", "SECONDS"}
    | {"SHELL", "SHELLOPTS", "SHLVL", "SRANDOM", "TERM", "UID", "_", "OPTARG", "REPLY"}
    | {"FUNCNAME", "PIPESTATUS", "COPROC", "MAPFILE", "CDPATH", "GLOBIGNORE", "EXECIGNORE"}
    | {"FUNCNEST", "POSIXLY_CORRECT", "TMOUT", "TIMEFORMAT", "ENV", "OLDPWD", "TMPDIR"}
)
# Slurm's own, set in every job (the array's in every task of an array): a path may name them.
SLURM_JOB_VARIABLES = frozenset(
    {
        "SLURM_JOB_ID",
        "SLURM_JOB_NAME",
        "SLURM_SUBMIT_DIR",
        "SLURM_ARRAY_JOB_ID",
        "SLURM_ARRAY_TASK_ID",
    }
)


def quote(value: str) -> str:
    """`value` as one literal shell word, as shlex quotes it; also quoted when it starts with "=",
    which shellcheck takes for a mistaken comparison after NAME= (NAME==x)."""
    quoted = shlex.quote(value)
    return f"'{value}'" if quoted.startswith("=") else quoted


def path_parts(value: str) -> list[tuple[str, str]]:
    """The path in order as ("var", NAME) and ("text", literal) parts; a leading ~ is HOME.
    Anything else after a $ ($(…), $1, $$) is text."""
    parts: list[tuple[str, str]] = []
    at = 0
    if HOME_START.match(value):
        parts.append(("var", "HOME"))
        at = 1
    for found in VARIABLE_REF.finditer(value, at):
        if found.start() > at:
            parts.append(("text", value[at : found.start()]))
        parts.append(("var", found.group(1) or found.group(2)))
        at = found.end()
    if at < len(value):
        parts.append(("text", value[at:]))
    return parts


def variables_in(value: str) -> list[str]:
    """Every variable the path names, in order, once each ("HOME" for a leading ~)."""
    return list(dict.fromkeys(name for kind, name in path_parts(value) if kind == "var"))


# What a shell would expand into several paths were the path unquoted: *, ?, a range [0-9], a
# brace list {a,b}. The portal quotes every path it writes, so the job would look for a file
# named with these. A bracket without a range ([1]) is taken as part of a folder's name.
PATTERN = re.compile(r"[*?]|\[[^\]/]*-[^\]/]*\]|\{[^{}/]*,[^{}/]*\}")


def pattern_in(value: str) -> str:
    """The first pattern in the path's literal parts, or "" where it names one path."""
    for kind, text in path_parts(value):
        if kind == "text" and (found := PATTERN.search(text)):
            return found.group()
    return ""


def split_path(value: str) -> tuple[str, str]:
    """(the variable a path starts with, "HOME" for ~, or ""; the rest as written)."""
    parts = path_parts(value)
    if not parts or parts[0][0] != "var":
        return "", value
    start = 1 if HOME_START.match(value) else VARIABLE_REF.match(value).end()
    return parts[0][1], value[start:]


def shell_path(value: str) -> str:
    """`value` as one shell word: `$SCRATCH/my data/$USER` -> `"$SCRATCH"'/my data/'"$USER"`."""
    parts = path_parts(value)
    if not any(kind == "var" for kind, _ in parts):
        return quote(value)
    return "".join(f'"${name}"' if kind == "var" else shlex.quote(name) for kind, name in parts)
