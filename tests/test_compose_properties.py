"""Whatever valid form a user fills in, on any cluster, the composer's script is bash that parses,
passes shellcheck, and has only the directives the portal writes (tests/test_script_render.py
holds hostile text to the renderer; this goes through the whole form and the engine)."""

import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobs.compose.forms import ComposeForm
from jobs.compose.from_form import compose
from tests.test_script_render import HOSTILE, _directives

CLUSTERS = ["narval", "beluga", "cedar", "graham", "processing"]
# The directives the portal may write, by name; the values Slurm reads are validated elsewhere.
OURS = {
    "job-name", "account", "partition", "nodes", "ntasks-per-node", "gres", "cpus-per-task",
    "mem", "time", "output", "error", "array", "signal", "mail-user", "mail-type", "requeue",
    "open-mode",
}  # fmt: skip

FORMS = st.fixed_dictionaries(
    {
        "cluster": st.sampled_from(CLUSTERS),
        "job_name": st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,20}", fullmatch=True),
        "account": st.sampled_from(["", "def-someuser"]),
        "workload": st.sampled_from(["training", "inference", "debugging"]),
        "dataset_gb": st.sampled_from(["0.5", "5", "50", "500"]),
        "file_count": st.sampled_from(["", "1", "3", "200000"]),
        "data_path": st.sampled_from(
            ["", "/project/d", "/project/d.tar", "/project/d.zip", "~/w.bin", "$HOME/my data/"]
        ),
        "gpu_count": st.sampled_from(["1", "2", "4", "8"]),
        "hours": st.sampled_from(["0.5", "3", "12", "30", "72"]),
        "nodes": st.sampled_from(["1", "2"]),
        "similar_runs": st.sampled_from(["1", "3"]),
        "environment": st.sampled_from(["none", "requirements"]),
        "command": HOSTILE.filter(str.strip),
        "launch": st.sampled_from(["", "node", "gpu-tasks", "node-tasks"]),
        "results_dir": st.sampled_from(["$HOME/results", "~/r", "/project/out dir"]),
        "mail_user": st.sampled_from(["", "me@example.org"]),
    },
    optional={
        "checkpointing": st.just("on"),
        "multi_gpu": st.just("on"),
    },
)


@pytest.fixture(scope="module")
def shellcheck() -> str:
    path = shutil.which("shellcheck")
    if path is None:
        from tests.services import service_missing

        service_missing("shellcheck is not installed (scripts/install-test-deps installs it)")
    return path


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(form=FORMS)
def test_every_script_the_composer_writes_is_sound(seeded, shellcheck, form):
    data = form | {"environment_path": "$HOME/requirements.txt"}
    composed = compose(ComposeForm(data))
    if composed is None or not composed.script:
        return  # refused with a message in the form, which other tests hold to its words
    text = composed.script
    assert subprocess.run(["bash", "-n"], input=text.encode(), check=False).returncode == 0
    lint = subprocess.run(
        [shellcheck, "-S", "warning", "-"], input=text.encode(), capture_output=True, check=False
    )
    assert lint.returncode == 0, lint.stdout.decode()
    names = [line.split()[1].removeprefix("--").split("=")[0] for line in _directives(text)]
    assert set(names) <= OURS and len(names) == len(set(names)), names
