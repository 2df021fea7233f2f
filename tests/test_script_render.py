"""The script's structure belongs to the portal: hostile values stay data, whatever they hold."""

import subprocess
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from guidance.engine import Placement
from guidance.engine.shell import variables_in
from jobs.compose.script import render
from jobs.compose.script_spec import FORM_FIELDS, ScriptError, ScriptSpec, Stage

BENIGN = ScriptSpec(
    cluster="Narval",
    job_name="train",
    account="def-someuser",
    gpu_type="a100",
    gpus_per_node=1,
    nodes=1,
    cpus_per_task=12,
    mem="124500M",
    time="0-12:00:00",
    command="python train.py",
    modules=("python/3.11", "cuda"),
    requirements="/home/me/requirements.txt",
    placement=Placement.NODE_LOCAL,
    stage_root="$SLURM_TMPDIR",
    data_source="/project/def-someuser/data.tar",
    results_dest="/project/def-someuser/results",
    staging=(Stage("Extract", 'mkdir -p "$STAGE_DIR" && tar xf "$DATA_SOURCE" -C "$STAGE_DIR"'),),
    copy_back=Stage("Copy back", 'rsync -a "$RESULTS_DIR"/ "$RESULTS_DEST"/'),
)
QUOTED_FIELDS = {
    "command": "JOB_COMMAND",
    "data_source": "DATA_SOURCE",
    "results_dest": "RESULTS_DEST",
    "requirements": "REQUIREMENTS",
}
# Pieces that break naive scripts, put together in any order.
HOSTILE = st.lists(
    st.sampled_from(
        [
            *"$()`'\"\\;&|<>#!*?[]{}~ \n\t=-/.aSBATCHé",
            *["$(rm -rf ~)", "`id`", "#SBATCH --time=99-00:00:00", "\n#SBATCH --gres=gpu:8\n"],
            *["\u2028", "😀", "\x00", "\x1b[31m", "'\"'", "EOF", "${IFS}"],
        ]
    ),
    max_size=12,
).map("".join)


DIRECTIVES = {
    f"#SBATCH --{name}"
    for name in [
        "job-name",
        "account",
        "partition",
        "nodes",
        "ntasks-per-node",
        "gres",
        "cpus-per-task",
        "mem",
        "time",
        "output",
        "error",
        "array",
        "signal",
        "mail-user",
        "mail-type",
    ]
}


def _directives(text: str) -> list[str]:
    """The directives as sbatch reads them: up to the first line that is not a comment."""
    directives = []
    for line in text.splitlines()[1:]:
        if line.strip() and not line.startswith("#"):
            break
        if line.startswith("#SBATCH"):
            directives.append(line)
    return directives


def _values_in_bash(text: str) -> dict[str, str]:
    # Run only the assignments (up to the export line) and read back what bash made of them.
    prefix = text.split("\nexport DATA_SOURCE")[0].split("set -euo pipefail\n", 1)[1]
    names = " ".join(QUOTED_FIELDS.values())
    program = f"{prefix}\nfor n in {names}; do printf '%s\\0' \"${{!n}}\"; done"
    result = subprocess.run(
        ["bash", "-c", program],
        capture_output=True,
        env={"HOME": "/home/me", "SLURM_TMPDIR": "/tmp/job", "PATH": "/usr/bin:/bin"},
        check=True,
    )
    values = result.stdout.decode().split("\0")[:-1]
    return dict(zip(QUOTED_FIELDS.values(), values, strict=True))


def _after_values(text: str) -> str:
    return text.split("\nexport DATA_SOURCE", 1)[1]


def test_the_benign_script_is_valid_bash():
    text = render(BENIGN)
    assert subprocess.run(["bash", "-n"], input=text.encode(), check=False).returncode == 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(field=st.sampled_from(list(QUOTED_FIELDS)), value=HOSTILE)
def test_hostile_text_stays_data(field, value):
    if field != "command":
        # ~ and every $NAME in a path expand, by design (tests/test_shell_paths.py); $(…),
        # backticks, quotes and the rest stay data.
        assume(not variables_in(value))
    if field == "requirements":
        assume(value)  # empty means no virtualenv to build: another script, rightly
    spec = replace(BENIGN, **{field: value})
    try:
        text = render(spec)
    except ScriptError as error:
        # Refused with a message naming the field: control characters, or a path over lines.
        assert error.field == FORM_FIELDS[field]
        assert "\x00" in value or "\x1b" in value or "\n" in value or not value.strip()
        return
    benign = render(BENIGN)
    assert _directives(text) == _directives(benign)
    assert _after_values(text) == _after_values(benign)
    assert subprocess.run(["bash", "-n"], input=text.encode(), check=False).returncode == 0
    assert _values_in_bash(text)[QUOTED_FIELDS[field]] == value


@settings(max_examples=150, deadline=None)
@given(
    field=st.sampled_from(["job_name", "account", "partition", "gpu_type", "mail_user"]),
    value=HOSTILE,
)
def test_hostile_names_are_refused_or_harmless(field, value):
    spec = replace(BENIGN, **{field: value})
    try:
        text = render(spec)
    except ScriptError as error:
        assert error.field == field
        return
    # Accepted only when it is a plain name (or empty, dropping an optional directive).
    assert "\n" not in value and "#" not in value and " " not in value
    options = [line.split("=")[0] for line in _directives(text)]
    assert len(options) == len(set(options))
    assert set(options) <= DIRECTIVES
    assert subprocess.run(["bash", "-n"], input=text.encode(), check=False).returncode == 0


@pytest.mark.parametrize(
    ("modules", "ok"),
    [(("python/3.11", "cuda"), True), (("cuda;", "x"), False), (("$(id)",), False)],
)
def test_module_names_are_validated(modules, ok):
    spec = replace(BENIGN, modules=modules)
    if ok:
        assert f"module load {' '.join(modules)}" in render(spec)
    else:
        with pytest.raises(ScriptError) as error:
            render(spec)
        assert error.value.field == "modules"


def test_paths_may_start_with_home_or_a_tilde():
    text = render(replace(BENIGN, results_dest="~/results", data_source="$HOME/a b.tar"))
    assert 'RESULTS_DEST="$HOME"/results' in text
    assert "DATA_SOURCE=\"$HOME\"'/a b.tar'" in text
    assert _values_in_bash(text)["DATA_SOURCE"] == "/home/me/a b.tar"


def test_an_empty_command_is_refused():
    with pytest.raises(ScriptError) as error:
        render(replace(BENIGN, command="  \n "))
    assert error.value.field == "command"


@pytest.mark.parametrize("value", ["=", "==x", "=/data"])
def test_a_value_that_starts_with_an_equals_sign_is_quoted(value):
    # Found by tests/test_compose_properties.py: JOB_COMMAND== is bash, but shellcheck's SC1097.
    text = render(replace(BENIGN, command=value, data_source=value))
    assert f"JOB_COMMAND='{value}'" in text
    assert f"DATA_SOURCE='{value}'" in text
    assert _values_in_bash(text)["JOB_COMMAND"] == value
