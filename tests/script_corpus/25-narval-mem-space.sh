#!/bin/bash
#SBATCH --account=def-sroy
#SBATCH --gres=gpu:a100:2
#SBATCH --cpus-per-task=24
#SBATCH --mem= 150G
#SBATCH --time=0-06:00

module load python/3.11
virtualenv --no-download $SLURM_TMPDIR/venv && source $SLURM_TMPDIR/venv/bin/activate
pip install --no-index torch torchvision

tar xf ~/projects/def-sroy/flowers102.tar -C $SLURM_TMPDIR
torchrun --nproc_per_node=2 train.py --data $SLURM_TMPDIR/flowers102
