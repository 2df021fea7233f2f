"""Check my script sees GPUs a job holds and cannot use: a container started without --nv, and a
server or keep-alive that waits for a person (JupyterLab, code-server, sleep infinity)."""

import subprocess

import pytest

from guidance.engine import sources
from guidance.engine.script_check import Severity, check_script
from guidance.engine.script_check.held_gpus import APPTAINER_GPUS
from tests.engine_helpers import cluster, codes, note
from tests.script_check_helpers import checked

FEDERATION = """\
#!/bin/bash
#SBATCH --account=def-someuser
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=6
#SBATCH --time=0-12:00
"""


def federation(body: str, time: str = "0-12:00") -> str:
    return FEDERATION.replace("0-12:00", time) + body


def processing(gres: str, body: str, time: str = "7-00:00") -> str:
    return f"#!/bin/bash\n#SBATCH --gres=gpu:{gres}:1\n#SBATCH --time={time}\n{body}"


# --- A container started without --nv -------------------------------------------------------

TRAIN_IN_CONTAINER = "python train.py --data /data\n"


@pytest.mark.parametrize(
    "start",
    [
        "apptainer exec -B $SLURM_TMPDIR/d:/data img.sif ",
        "srun apptainer exec -B $SLURM_TMPDIR/d:/data img.sif ",
        "singularity run --bind $SLURM_TMPDIR/d:/data img.sif ",
        "srun --ntasks=1 /opt/apptainer/bin/apptainer --silent exec img.sif ",
    ],
)
def test_a_container_without_nv_is_flagged_and_fixed(start, tmp_path):
    text = federation(start + TRAIN_IN_CONTAINER)
    result = check_script(text, cluster("narval"))
    found = note(result.notes, "container_without_gpus")
    assert found.lines == (6,)
    assert found.severity == Severity.WASTES
    assert found.source == APPTAINER_GPUS
    assert "sees no GPU" in found.message and "1 GPU" in found.message
    fixed_line = result.fixed.splitlines()[5]
    assert " --nv " in fixed_line and fixed_line.replace(" --nv", "", 1) == text.splitlines()[5]
    assert "container_without_gpus" not in codes(
        check_script(result.fixed, cluster("narval")).notes
    )
    path = tmp_path / "fixed.sh"
    path.write_text(result.fixed)
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0


def test_the_fix_lands_on_the_continued_line_that_names_the_subcommand():
    body = "srun \\\n    apptainer exec \\\n    --bind $SLURM_TMPDIR/d:/data img.sif \\\n"
    result = check_script(federation(body + "    " + TRAIN_IN_CONTAINER), cluster("cedar"))
    assert note(result.notes, "container_without_gpus").lines == (6,)
    assert "+    apptainer exec --nv \\" in result.diff


@pytest.mark.parametrize(
    "body",
    [
        "apptainer exec --nv img.sif " + TRAIN_IN_CONTAINER,
        "apptainer exec --nvccli img.sif " + TRAIN_IN_CONTAINER,
        "export APPTAINER_NV=1\napptainer exec img.sif " + TRAIN_IN_CONTAINER,
        # The instance was started with (or without) its GPUs: that line decides.
        "apptainer exec instance://train " + TRAIN_IN_CONTAINER,
        # A container for CPU work beside one that gets the GPUs.
        "apptainer exec img.sif python prepare.py\napptainer exec --nv img.sif "
        + TRAIN_IN_CONTAINER,
        # The container only prepares; the training runs outside it.
        "apptainer exec img.sif python prepare.py\npython train.py $SLURM_TMPDIR/d\n",
        "module load apptainer\necho 'apptainer exec img.sif python train.py'\n"
        "python train.py $SLURM_TMPDIR/d\n",
    ],
)
def test_containers_that_get_the_gpus_or_do_not_need_them_pass(body):
    assert "container_without_gpus" not in codes(checked(federation(body), "narval"))


def test_a_container_in_a_job_without_gpus_needs_no_nv():
    text = federation("apptainer exec img.sif python prepare.py\n").replace(
        "#SBATCH --gres=gpu:1\n", ""
    )
    assert "container_without_gpus" not in codes(checked(text, "narval"))


# --- A server or keep-alive holding the GPUs --------------------------------------------------


def test_a_notebook_server_on_an_a100_for_a_week_is_flagged_with_the_debugging_gpus():
    text = processing("a100", "source ~/venv/bin/activate\njupyter lab --no-browser --port=8888\n")
    found = note(checked(text, "processing"), "server_holds_gpus")
    assert found.lines == (5,)
    assert found.severity == Severity.WASTES
    assert found.source == sources.PROCESSING_TRAINING  # 000: A100 near 100 %, roentgen to debug
    assert "JupyterLab" in found.message and "7 days" in found.message
    assert "A100" in found.message and "near 100 %" in found.message
    assert "roentgen" in found.fix and "--gres=gpu:roentgen:1" in found.fix


def test_a_job_that_may_land_on_an_a100_is_told_so():
    text = processing("a100", "jupyter notebook --ip=0.0.0.0\n").replace("gpu:a100:1", "gpu:1")
    found = note(checked(text, "processing"), "server_holds_gpus")
    assert "A100 and A6000" in found.message and "may get one" in found.message


def test_the_gpus_set_aside_for_debugging_may_hold_a_notebook():
    text = processing("roentgen", "jupyter lab --no-browser\n", time="0-08:00")
    assert codes(checked(text, "processing")) == set()


@pytest.mark.parametrize(
    ("body", "line", "words"),
    [
        ("sleep infinity\n", 6, "sleep infinity"),
        ("hostname\ntail -f /dev/null\n", 7, "tail -f /dev/null"),
        ("while true; do sleep 600; done\n", 6, "keep-alive loop"),
        ("while :\ndo\n    date\n    sleep 3600\ndone\n", 6, "keep-alive loop"),
        ("code-server --bind-addr 0.0.0.0:8080 &\nwait\n", 6, "VS Code server"),
        (
            "jupyter-lab --no-browser --port=$PORT > nb.log 2>&1 &\nsleep 7d\n",
            7,
            "JupyterLab server",
        ),
        ("srun bash -c 'jupyter notebook --ip $(hostname -i)'\n", 6, "Jupyter notebook"),
        ("python -m jupyterlab --port 9999\n", 6, "JupyterLab server"),
    ],
)
def test_servers_and_keep_alives_on_the_federation_are_flagged(body, line, words):
    found = note(checked(federation(body, time="2-00:00"), "graham"), "server_holds_gpus")
    assert line in found.lines
    assert words in found.message and "2 days" in found.message
    assert found.source == sources.INTERACTIVE_FIRST  # 002: salloc for interactive work
    assert "salloc" in found.fix


@pytest.mark.parametrize(
    "body",
    [
        "echo 'open jupyter lab on port 8888'\npython train.py $SLURM_TMPDIR/d\n",
        "pip install --no-index jupyterlab\npython train.py $SLURM_TMPDIR/d\n",
        "jupyter nbconvert --to notebook --execute train.ipynb\n",
        "while true; do nvidia-smi >> gpu.log; sleep 60; done &\npython train.py $SLURM_TMPDIR/d\n",
        "sleep infinity &\npython train.py $SLURM_TMPDIR/d\n",
        "tensorboard --logdir runs &\njupyter lab &\npython train.py $SLURM_TMPDIR/d\n",
        "sleep 30\npython train.py $SLURM_TMPDIR/d\n",
        "sleep $((RANDOM % 600))\npython train.py $SLURM_TMPDIR/d\n",
        "while true; do python train.py --resume $SLURM_TMPDIR/d && break; done\n",
    ],
)
def test_work_that_ends_with_the_job_holds_nothing(body):
    assert "server_holds_gpus" not in codes(checked(federation(body, time="2-00:00"), "graham"))


def test_a_short_notebook_session_holds_no_more_than_an_interactive_job():
    text = federation("jupyter lab --no-browser\n", time="0-02:00")
    assert "server_holds_gpus" not in codes(checked(text, "narval"))


def test_a_server_in_a_job_without_gpus_holds_none():
    text = processing("a100", "jupyter lab\n").replace("#SBATCH --gres=gpu:a100:1\n", "")
    assert "server_holds_gpus" not in codes(checked(text, "processing"))
