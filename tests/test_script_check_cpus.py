"""Check my script: too few CPUs per GPU matter only where the program starts more data-loading
workers than the job's CPUs. Read from the program given beside the script, from the command's
own workers option, else asked; a program with no workers, or as many as the CPUs, hears
nothing (issue 41: no note that changes nothing for the user)."""

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guidance.engine.script_check import Basis, Severity, check_script
from tests.engine_helpers import cluster, codes, note

TOP = "#!/bin/bash\n#SBATCH --account=def-someuser\n#SBATCH --time=0-03:00\n"
ONE_CPU = TOP + "#SBATCH --gres=gpu:1 --cpus-per-task=1 --mem=32000M\n"
RUN = "python train.py --data $SLURM_TMPDIR/d\n"
LOADER = "import torch\nloader = torch.utils.data.DataLoader(ds, batch_size=64{})\n"


def notes(text: str, program: dict[str, str] | None, slug: str = "narval"):
    return check_script(text, cluster(slug), program=program).notes


def workers(argument: str) -> dict[str, str]:
    return {"train.py": LOADER.format(argument)}


@pytest.mark.parametrize(
    "program",
    [
        workers(""),  # the data in memory, batches made in the training process
        workers(", num_workers=0"),
        workers(", num_workers=1"),  # one worker for one CPU
        workers(", num_workers=int(os.environ['SLURM_CPUS_PER_TASK'])"),
        {"train.py": "import torch\nx = torch.load('features.pt').cuda()\n"},  # no loader
        {"train.py": "from transformers import TrainingArguments\nTrainingArguments('out')\n"},
    ],
)
def test_a_program_that_starts_no_more_workers_than_cpus_hears_nothing(program):
    assert "too_few_cpus" not in codes(notes(ONE_CPU + RUN, program))


def test_a_program_starting_more_workers_than_cpus_is_told_where():
    found = note(notes(ONE_CPU + RUN, workers(", num_workers=8")), "too_few_cpus")
    assert (found.severity, found.basis) == (Severity.WASTES, Basis.PROGRAM)
    assert "train.py, line 2, starts 8 DataLoader workers (num_workers=8)" in found.message
    assert "--cpus-per-task=8" in found.fix
    assert found.edits


def test_an_options_default_counts_unless_the_command_gives_the_option():
    program = {
        "train.py": "import argparse, torch\np = argparse.ArgumentParser()\n"
        "p.add_argument('-j', '--workers', type=int, default=8)\nargs = p.parse_args()\n"
        "loader = torch.utils.data.DataLoader(ds, num_workers=args.workers)\n"
    }
    found = note(notes(ONE_CPU + RUN, program), "too_few_cpus")
    assert "the option `--workers`" in found.message
    fitting = ONE_CPU + RUN.replace("\n", " --workers 1\n")
    assert "too_few_cpus" not in codes(notes(fitting, program))
    more = note(notes(ONE_CPU + RUN.replace("\n", " -j 4\n"), program), "too_few_cpus")
    assert "starts 4 DataLoader workers" in more.message


def test_without_the_program_it_is_a_question_unless_the_command_shows_workers():
    asked = note(notes(ONE_CPU + RUN, None), "too_few_cpus")
    assert (asked.severity, asked.basis, asked.edits) == (Severity.ADVICE, Basis.QUESTION, ())
    assert "Give the program beside the script" in asked.fix
    shown = note(notes(ONE_CPU + RUN.replace("\n", " --num_workers 8\n"), None), "too_few_cpus")
    assert (shown.severity, shown.basis) == (Severity.WASTES, Basis.SCRIPT)
    assert "--cpus-per-task=8" in shown.fix
    for fitting in (" --num_workers 1\n", " --num-workers=$SLURM_CPUS_PER_TASK\n"):
        assert "too_few_cpus" not in codes(notes(ONE_CPU + RUN.replace("\n", fitting), None))


def test_hugging_faces_workers_come_from_its_arguments_or_the_command_line():
    stated = {
        "train.py": "from transformers import TrainingArguments\n"
        "TrainingArguments('out', dataloader_num_workers=6)\n"
    }
    assert note(notes(ONE_CPU + RUN, stated), "too_few_cpus").basis == Basis.PROGRAM
    parsed = {
        "train.py": "from transformers import HfArgumentParser, Trainer, TrainingArguments\n"
        "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"
        "Trainer(model=m, args=args).train()\n"
    }
    assert "too_few_cpus" not in codes(notes(ONE_CPU + RUN, parsed))
    command = ONE_CPU + RUN.replace("\n", " --dataloader_num_workers 8\n")
    found = note(notes(command, parsed), "too_few_cpus")
    assert "--dataloader_num_workers 8" in found.message


LIGHTNING_CLI = """\
from lightning.pytorch import LightningDataModule
from lightning.pytorch.cli import LightningCLI
from torch.utils.data import DataLoader

class Data(LightningDataModule):
    def __init__(self, root: str = "d", num_workers: int = 8):
        super().__init__()
        self.num_workers = num_workers

    def train_dataloader(self):
        return DataLoader(self.ds, num_workers=self.num_workers)

LightningCLI(Model, Data, trainer_defaults={"devices": 1})
"""


def test_a_lightning_datamodules_default_counts_unless_the_command_sets_it():
    run = "python cli.py fit --data.root $SLURM_TMPDIR/d\n"
    found = note(notes(ONE_CPU + run, {"cli.py": LIGHTNING_CLI}), "too_few_cpus")
    assert "cli.py, line 11, starts 8 DataLoader workers" in found.message
    told = ONE_CPU + run.replace("\n", " --data.num_workers 1\n")
    assert "too_few_cpus" not in codes(notes(told, {"cli.py": LIGHTNING_CLI}))


def test_each_process_a_launcher_starts_has_its_own_workers():
    text = TOP + "#SBATCH --gres=gpu:4 --cpus-per-task=4 --mem=498000M\n"
    run = "torchrun --nproc_per_node=4 train.py --data $SLURM_TMPDIR/d\n"
    found = note(notes(text + run, workers(", num_workers=2")), "too_few_cpus")
    assert "in each of the 4 processes" in found.message
    assert "--cpus-per-task=8" in found.fix


def test_the_fix_stays_within_the_share():
    # Narval's share is 12 CPUs per A100: 16 workers get 12 CPUs, and the fix says so.
    found = note(notes(ONE_CPU + RUN, workers(", num_workers=16")), "too_few_cpus")
    assert "--cpus-per-task=12" in found.fix
    assert "start fewer workers" in found.fix


@settings(
    max_examples=int(os.environ.get("FIXED_SCRIPT_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    st.integers(1, 4),
    st.data(),
    st.integers(0, 32),
    st.sampled_from(("narval", "beluga", "cedar", "graham")),
)
def test_too_few_cpus_is_said_exactly_when_the_workers_outnumber_them(gpus, data, count, slug):
    cpus = data.draw(st.integers(1, 2 * gpus - 1), label="cpus")  # under 2 per GPU
    text = TOP + f"#SBATCH --gres=gpu:{gpus} --cpus-per-task={cpus}\n" + RUN
    program = workers(f", num_workers={count}")
    # One process: the four GPUs through DataParallel, whose one loader has all the CPUs.
    program["train.py"] += "model = torch.nn.DataParallel(model)\n"
    result = check_script(text, cluster(slug), program=program)
    found = [n for n in result.notes if n.code == "too_few_cpus"]
    assert bool(found) == (count > cpus), found
    if found:
        assert found[0].basis == Basis.PROGRAM and found[0].edits
        fixed = check_script(result.fixed, cluster(slug), program=program)
        again = [n for n in fixed.notes if n.code == "too_few_cpus"]
        # The fix gives each worker a CPU, or the share's most, where it then asks for fewer.
        assert not again or "start fewer workers" in found[0].fix, again


def test_a_count_the_files_do_not_fix_is_asked_about_at_its_loader():
    program = {
        "train.py": "import torch, yaml\ncfg = load_config()\n"
        "loader = torch.utils.data.DataLoader(ds, num_workers=cfg.workers)\n"
    }
    asked = note(notes(ONE_CPU + RUN, program), "too_few_cpus")
    assert (asked.severity, asked.basis, asked.edits) == (Severity.ADVICE, Basis.QUESTION, ())
    assert "train.py, line 3, starts DataLoader workers (num_workers=cfg.workers)" in (
        asked.message
    )
    told = note(notes(ONE_CPU + RUN.replace("\n", " --workers 6\n"), program), "too_few_cpus")
    assert "starts 6 DataLoader workers" in told.message


def test_a_programs_own_gpu_option_starts_no_processes():
    text = TOP + "#SBATCH --gres=gpu:4 --cpus-per-task=4 --mem=498000M\n"
    run = "python train.py --num_gpus 4 --data $SLURM_TMPDIR/d\n"
    program = workers(", num_workers=4")
    program["train.py"] += "model = torch.nn.DataParallel(model)\n"
    assert "too_few_cpus" not in codes(notes(text + run, program))
