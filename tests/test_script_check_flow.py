"""The script as bash runs it: variables with their defaults, one-off environments, cd and
subshells, followed along the script's lines."""

import pytest

from guidance.engine.script_check.flow import walk
from guidance.engine.script_check.parse import parse_script
from guidance.engine.script_check.shell_lines import Command, Shell, steps


def walked(body: str, known=()):
    return list(walk(parse_script("#!/bin/bash\n" + body), known))


@pytest.mark.parametrize(
    ("body", "value"),
    [
        ("D=/project/d\n", "/project/d"),
        ("D=${D:-/project/d}\n", "/project/d"),
        ("D=${D-/project/d}\n", "/project/d"),
        (": ${D:=/project/d}\n", "/project/d"),
        ("D=${1:-/project/d}\n", "/project/d"),
        ("R=/project\nD=${R}/d\n", "/project/d"),
        ("R=/project\nD=${X:-$R/d}\n", "/project/d"),
        # Set by the job: the default is not used.
        ("D=${SLURM_TMPDIR:-/tmp}/d\n", "$SLURM_TMPDIR/d"),
        ("D=${SCRATCH:-/tmp}/d\n", "$SCRATCH/d"),
        ("R=/project\nD=${R:+$R/d}\n", "/project/d"),
        ("D=${NOPE:+/project/d}x\n", "x"),
        ("export D=/project/d\n", "/project/d"),
    ],
)
def test_variables_take_the_value_bash_gives_them(body, value):
    last = walked(body + "echo $D\n", known={"SCRATCH"})[-1]
    assert last.words == ("echo", value)


def test_a_one_off_environment_belongs_to_its_command_alone():
    first, second = walked("DATA_DIR=/project/d WANDB_MODE=offline python t.py\necho $DATA_DIR\n")
    assert first.env == (("DATA_DIR", "/project/d"), ("WANDB_MODE", "offline"))
    assert first.words == ("python", "t.py")
    assert second.words == ("echo", "$DATA_DIR")


def test_exported_variables_are_seen_by_later_commands():
    last = walked("export DATA_ROOT=/project/d\nA=1\npython t.py\n")[-1]
    assert last.exported == (("DATA_ROOT", "/project/d"),)


def test_a_cd_in_a_subshell_ends_with_it():
    body = "cd ~/code\n( cd $SLURM_TMPDIR && tar xf /p/d.tar )\npython t.py\n"
    tar, program = walked(body)[-2:]
    assert tar.cwd == "$SLURM_TMPDIR"
    assert program.cwd == "$HOME/code"
    assert program.undone_cd == (3, "$SLURM_TMPDIR")


def test_a_cd_of_the_script_itself_stays():
    program = walked("cd $SLURM_TMPDIR\ncd data\npython t.py\n")[-1]
    assert (program.cwd, program.undone_cd) == ("$SLURM_TMPDIR/data", None)


def test_what_a_subshell_sets_ends_with_it():
    program = walked("D=/project/d\n(D=$SLURM_TMPDIR/d)\npython t.py $D\n")[-1]
    assert program.words == ("python", "t.py", "/project/d")


@pytest.mark.parametrize(
    ("line", "parts"),
    [
        ("( cd x && tar xf y )", ["(", ("cd", "x"), ("tar", "xf", "y"), ")"]),
        ("D=$(cd x; pwd)", [("D=$",), "(", ("cd", "x"), ("pwd",), ")"]),
        # An array and a function's parentheses are no subshell.
        ("FILES=(a b $X) ; cd y", [("FILES=(a b $X)",), ("cd", "y")]),
        ("stage() {", [("stage",), ("{",)]),
    ],
)
def test_subshells_are_told_from_other_parentheses(line, parts):
    found = [s.words if isinstance(s, Command) else s for s in steps(line)]
    assert found == parts


def test_unset_names_and_the_names_they_misspell():
    shell = Shell(known={"SCRATCH"})
    shell.assign(Command(("DATASET=/project/d",), background=False))
    assert shell.unset_in("$DATSET/ $SCRATCH/x $SLURM_TMPDIR ${HOME} $1 ${NOPE:-/x}") == ["DATSET"]
    assert shell.meant("DATSET") == "DATASET"
    assert shell.meant("ARCHIVE") is None


@pytest.mark.parametrize(
    "body",
    ["for f in a b; do\n", "while read -r f; do\n", "read f g\n"],
)
def test_loop_and_read_variables_are_set(body):
    shell = Shell()
    for step in steps(body.splitlines()[0]):
        if isinstance(step, Command):
            shell.assign(step)
    assert shell.unset_in("$f") == []
