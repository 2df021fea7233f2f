"""A chain of jobs (--array=1-N%1) or a requeued job saves work only where the program, started
again, loads what the last part saved: judged by the program where it is given, else asked when
the script hands it nothing to resume from. Never on the processing cluster, which publishes no
checkpoint rule."""

import pytest

from guidance.engine.script_check import Basis, Severity, check_script
from tests.engine_helpers import cluster, codes, note

CHAIN = (
    "#!/bin/bash\n#SBATCH --account=def-someuser\n#SBATCH --array=1-6%1\n"
    "#SBATCH --gres=gpu:1 --cpus-per-task=12 --mem=124500M\n#SBATCH --time=1-00:00\n"
    "python train.py --epochs 90\n"
)
SAVES_ONLY = "import torch\nfor epoch in range(90):\n    torch.save(model.state_dict(), 'a.pt')\n"


def _notes(text: str = CHAIN, slug: str = "narval", program: dict | None = None):
    return check_script(text, cluster(slug), program=program).notes


def test_a_program_that_never_loads_what_it_saves_redoes_each_part():
    found = note(_notes(program={"train.py": SAVES_ONLY}), "chain_without_resume")
    assert (found.severity, found.basis, found.lines) == (Severity.WASTES, Basis.PROGRAM, (3,))
    assert "redoes the work from the start" in found.message


@pytest.mark.parametrize(
    "loads",
    [
        "import torch\nstate = torch.load('last.pt')\n",
        "model.load_state_dict(state)\n",
        "import lightning as L\nL.Trainer().fit(model, ckpt_path='last')\n",
        "trainer.train(resume_from_checkpoint=True)\n",
        "accelerator.load_state('ckpt')\n",
    ],
)
def test_a_program_that_loads_its_saved_state_goes_on(loads):
    assert "chain_without_resume" not in codes(_notes(program={"train.py": loads}))


def test_without_the_program_a_chain_handed_no_checkpoint_is_a_question():
    found = note(_notes(), "chain_without_resume")
    assert (found.severity, found.basis, found.edits) == (Severity.ADVICE, Basis.QUESTION, ())
    assert "?" in found.message


@pytest.mark.parametrize(
    "command",
    [
        "python train.py --resume-from $SCRATCH/ckpt/last.pt",
        "python train.py --checkpoint-dir $SCRATCH/ckpt",
        # Each index runs other work (a sweep one at a time), not a continuation.
        "python train.py --seed $SLURM_ARRAY_TASK_ID",
    ],
)
def test_a_script_that_hands_the_program_a_checkpoint_is_not_asked(command):
    text = CHAIN.replace("python train.py --epochs 90", command)
    assert "chain_without_resume" not in codes(_notes(text))


def test_a_requeued_job_is_asked_too():
    text = CHAIN.replace("#SBATCH --array=1-6%1\n", "#SBATCH --requeue\n")
    assert note(_notes(text), "chain_without_resume").basis == Basis.QUESTION


def test_one_job_and_arrays_run_side_by_side_are_no_chain():
    for array in ("1-1%1", "1-6", "1-6%2"):
        text = CHAIN.replace("1-6%1", array)
        assert "chain_without_resume" not in codes(_notes(text))


def test_the_processing_cluster_is_never_told_about_checkpoints():
    text = CHAIN.replace("#SBATCH --account=def-someuser\n", "")
    assert "chain_without_resume" not in codes(_notes(text, "processing"))
