"""Check my script: several GPUs need a launcher that uses them."""

import pytest

from tests.engine_helpers import codes
from tests.script_check_helpers import checked, job


@pytest.mark.parametrize(
    "directives",
    [
        ("--gres=gpu:2",),
        ("--gres=gpu:a100:2",),
        ("--gpus=2",),
        ("-G 2",),
        ("--gpus-per-node=a100:2",),
        ("--gpus-per-task=1", "--ntasks=2"),
        ("--gpus-per-task=1", "--ntasks-per-node=2"),
        ("--nodes=2",),  # one GPU per node, two in all
    ],
)
def test_several_gpus_without_a_launcher_are_flagged(directives):
    text = job("--time=60", *directives)
    assert "multi_gpu_without_launcher" in codes(checked(text))


@pytest.mark.parametrize(
    "command",
    [
        "torchrun --nproc_per_node=4 train.py $SLURM_TMPDIR/d",
        "python -m torch.distributed.run --nproc_per_node=4 train.py $SLURM_TMPDIR/d",
        "python -m torch.distributed.launch train.py $SLURM_TMPDIR/d",
        "accelerate launch --multi_gpu train.py $SLURM_TMPDIR/d",
        "deepspeed train.py $SLURM_TMPDIR/d",
        "horovodrun -np 4 python train.py $SLURM_TMPDIR/d",
        "mpirun -np 4 python train.py $SLURM_TMPDIR/d",
        "srun --ntasks-per-node=4 python train.py $SLURM_TMPDIR/d",
        "python train.py --devices 4 $SLURM_TMPDIR/d",
        "python train.py trainer.devices=4 $SLURM_TMPDIR/d",
        "for i in 0 1 2 3; do CUDA_VISIBLE_DEVICES=$i python train.py --seed $i & done; wait",
        "python a.py & python b.py &\nwait",
    ],
)
def test_a_launcher_uses_the_gpus(command):
    text = job("--time=60", "--gres=gpu:4", body=command + "\n")
    assert "multi_gpu_without_launcher" not in codes(checked(text))


@pytest.mark.parametrize(
    "command",
    [
        "srun python train.py $SLURM_TMPDIR/d",  # one task: one process
        "torchrun --nproc_per_node 1 train.py $SLURM_TMPDIR/d",
        "accelerate launch --num_processes=1 train.py $SLURM_TMPDIR/d",
    ],
)
def test_a_launcher_told_to_start_one_process_is_flagged(command):
    text = job("--time=60", "--gres=gpu:4", body=command + "\n")
    assert "multi_gpu_without_launcher" in codes(checked(text))


def test_one_gpu_needs_no_launcher():
    assert "multi_gpu_without_launcher" not in codes(checked(job("--time=60", "--gpus=1")))
