"""Which Python program a job runs (read from its command or script), and which of the modules it
imports may be the project's own: what the job page's "Check the program" reads over SSH."""

import pytest

from guidance.engine import Placement
from guidance.engine.code_check.entry import program_entry
from guidance.engine.code_check.local_imports import local_imports
from jobs.compose.script import render
from jobs.compose.script_spec import ScriptSpec


@pytest.mark.parametrize(
    ("command", "path", "root"),
    [
        ("python train.py --epochs 3", "train.py", ""),
        ("python3 -u src/train.py", "src/train.py", "src"),
        ("python3 -W ignore -X dev ./train.py", "train.py", ""),
        ("torchrun --nproc_per_node 4 train.py --lr 0.1", "train.py", ""),
        ("torchrun --standalone --nproc_per_node=2 -m pkg.train", "pkg/train.py", ""),
        ("python -m torch.distributed.run --nproc_per_node=4 train.py", "train.py", ""),
        ("accelerate launch --num_processes 2 --mixed_precision bf16 train.py", "train.py", ""),
        ("deepspeed --num_gpus 2 train.py --deepspeed ds_config.json", "train.py", ""),
        ("srun python -m pkg.train", "pkg/train.py", ""),
        ("srun --ntasks-per-node 2 --gpus-per-task 1 python3 train.py", "train.py", ""),
        ("CUDA_VISIBLE_DEVICES=0 OMP_NUM_THREADS=4 python train.py", "train.py", ""),
        ("cd code && python train.py", "code/train.py", "code"),
        ("cd code\npython train.py", "code/train.py", "code"),
        ("cd code; cd ../other && python train.py", "other/train.py", "other"),
        ("srun --chdir=proj python train.py", "proj/train.py", "proj"),
        ("srun -D proj python train.py", "proj/train.py", "proj"),
        ("cd $HOME/proj && python train.py", "~/proj/train.py", "~/proj"),
        ("python ~/proj/train.py", "~/proj/train.py", "~/proj"),
        ('python "$SLURM_SUBMIT_DIR/train.py"', "train.py", ""),
        ("python /scratch/me/run/train.py", "/scratch/me/run/train.py", "/scratch/me/run"),
        ('CODE=/home/me/code\npython "$CODE/train.py"', "/home/me/code/train.py", "/home/me/code"),
        ('bash -c "python a/b.py"', "a/b.py", "a"),
        ('source "$VENV/bin/activate"\n"$VENV/bin/python" train.py > log 2>&1', "train.py", ""),
        ("apptainer exec --nv image.sif python train.py", "train.py", ""),
        ("#!/bin/bash\n#SBATCH --chdir=/scratch/me\npython train.py", "/scratch/me/train.py", ""),
        # A launcher's program is the training one, not a preparation step before it.
        ("python prepare.py\nsrun python train.py", "train.py", ""),
        ("python prepare.py && python train.py", "prepare.py", ""),
    ],
)
def test_it_names_the_program_a_command_runs(command, path, root):
    entry = program_entry(command)
    assert entry is not None
    assert entry.path == path
    assert entry.root == (root or entry.root)


@pytest.mark.parametrize(
    "command",
    [
        "python -c 'import torch; print(torch.cuda.is_available())'",
        "python - <<EOF\nprint(1)\nEOF",
        "python $SCRIPT",  # a variable the script does not set
        "cd $WORK && python train.py",
        "python -m pip install -r requirements.txt",
        "python --version",
        "echo python train.py",
        "accelerate config",
        "torchrun --no-python ./train.sh",
        "./run.sh",
        "sleep 60",
        "python 'unclosed.py",
        "",
        # Folders, not files: the page would say the job runs "" and read a folder.
        "python ~",
        "python ~/",
        "python $HOME",
        "python $SLURM_SUBMIT_DIR/",
        'python "$SLURM_SUBMIT_DIR"',
        "python code/",
        "python .",
        "cd code && python ..",
    ],
)
def test_it_names_no_program_where_the_words_do_not_fix_one(command):
    assert program_entry(command) is None


def _portal_script(command: str, nodes: int = 1) -> str:
    spec = ScriptSpec(
        cluster="portallab",
        job_name="job-12",
        partition="gpu-a100",
        gpu_type="a100",
        gpus_per_node=2,
        nodes=nodes,
        cpus_per_task=4,
        mem="1000M",
        time="00:10:00",
        command=command,
        placement=Placement.SHARED,
        data_source="$HOME/data",
        results_dest="$HOME/portal-jobs/job-12/results",
    )
    return render(spec)


@pytest.mark.parametrize("nodes", [1, 2])
def test_it_finds_the_users_command_in_the_portals_own_script(nodes):
    script = _portal_script('cd portal-jobs/job-12 && torchrun --nproc_per_node 2 "train.py"')
    assert "JOB_COMMAND=" in script  # where jobs.compose.script keeps the user's command
    entry = program_entry(script)
    assert entry is not None and entry.path == "portal-jobs/job-12/train.py"
    assert entry.name == "train.py"
    assert "torchrun --nproc_per_node 2" in entry.command


def test_the_portals_script_without_a_python_program_names_none():
    assert program_entry(_portal_script("./train.sh --fast")) is None


def test_a_module_is_named_from_the_root_it_runs_in():
    entry = program_entry("cd proj && python -m pkg.train")
    assert (entry.path, entry.root, entry.name) == ("proj/pkg/train.py", "proj", "pkg/train.py")


PROGRAM = """\
import os, sys
import torch
import torch.nn as nn
from torch.utils.data import DataLoader
import numpy as np
import models.resnet
from data import loaders, transforms as T
from utils.helpers import *
import config
from . import sibling  # in a file run as a script: Python refuses it
"""


def test_it_lists_the_projects_own_modules_with_the_files_they_would_be():
    found = {i.module: i for i in local_imports(PROGRAM, "train.py")}
    assert set(found) == {
        "models",
        "models.resnet",
        "data",
        "data.loaders",
        "data.transforms",
        "utils",
        "utils.helpers",
        "config",
    }
    assert found["models.resnet"].candidates == ("models/resnet.py", "models/resnet/__init__.py")
    assert found["config"].line == 9


def test_relative_imports_are_resolved_from_the_files_package():
    text = "from .layers import Block\nfrom ..common import seed\nfrom ... import too_far\n"
    found = {i.module for i in local_imports(text, "pkg/models/net.py")}
    assert found == {
        "pkg",
        "pkg.models",
        "pkg.models.layers",
        "pkg.models.layers.Block",
        "pkg.common",
        "pkg.common.seed",
    }


def test_python_and_its_libraries_are_never_looked_for():
    text = "import json, pathlib, torch, torchvision, transformers\nfrom lightning import Trainer\n"
    assert local_imports(text) == ()


def test_a_file_that_does_not_parse_imports_nothing():
    assert local_imports("import models\ndef broken(:\n") == ()
    assert local_imports(b"\xff\xfe\x00binary") == ()


def test_imports_inside_functions_count_too():
    text = "def main():\n    import helpers\n    from lazy.mod import f\n"
    assert {i.module for i in local_imports(text)} == {"helpers", "lazy", "lazy.mod", "lazy.mod.f"}
