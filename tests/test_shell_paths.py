"""A path as the job's bash reads it: ~ and every $NAME or ${NAME} are the job's, wherever they
stand, and everything else is literal (spaces, quotes, $(…), backticks, globs)."""

import os
import subprocess
from unittest import mock

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from guidance.engine.shell import shell_path, variables_in

JOB_ENV = {"HOME": "/home/ada", "USER": "ada", "SCRATCH": "/scratch/ada", "PROJECT": "/project/p"}


def _in_bash(word: str) -> str:
    result = subprocess.run(
        ["bash", "-c", f"set -u; printf %s {word}"],
        env=JOB_ENV | {"PATH": "/usr/bin:/bin"},
        capture_output=True,
        check=True,
    )
    return result.stdout.decode()  # as bytes: text mode would turn a \r into \n


def test_a_variable_further_on_in_a_path_is_the_jobs():
    assert _in_bash(shell_path("/project/def-x/$USER/set.h5")) == "/project/def-x/ada/set.h5"
    assert _in_bash(shell_path("$SCRATCH/my data/${USER}_runs")) == "/scratch/ada/my data/ada_runs"
    assert _in_bash(shell_path("~/a b")) == "/home/ada/a b"
    assert variables_in("$SCRATCH/x/${USER}/$USER") == ["SCRATCH", "USER"]


def test_what_is_not_a_variable_stays_literal():
    for path in [
        "/data/$(id)",
        "/data/`id`",
        "/d/$1",
        "/d/$$",
        "/d/*.tar",
        "~ada/x",
        "/d/'q'\"q\"",
    ]:
        assert _in_bash(shell_path(path)) == path, path


PIECES = st.sampled_from(
    [
        "$USER",
        "${HOME}",
        "$SCRATCH",
        "~",
        "/",
        " ",
        "'",
        '"',
        "$(",
        "`",
        "$",
        "*",
        "{",
        "}",
        "a",
        "_",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(PIECES | st.text(max_size=3), max_size=8))
def test_any_path_means_to_bash_what_python_expands_it_to(pieces):
    """Python's own expansion (os.path: ~ at the start, $NAME and ${NAME}) is the oracle."""
    path = "".join(pieces)
    assume("\x00" not in path and set(variables_in(path)) <= set(JOB_ENV))
    with mock.patch.dict(os.environ, JOB_ENV):
        expected = (
            os.path.expanduser(os.path.expandvars(path))
            if path.startswith("~/") or path == "~"
            else os.path.expandvars(path)
        )
    assert _in_bash(shell_path(path)) == expected
