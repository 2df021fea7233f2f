#!/bin/bash
#SBATCH -A def-me
#SBATCH --gres=gpu:a100:1
#SBATCH -c 6
#SBATCH --mem=40G
#SBATCH -t 6:00:00

PYTHON=/home/me/env/bin/python

cp ~/projects/def-me/me/d.tar $SLURM_TMPDIR/
tar xf $SLURM_TMPDIR/d.tar -C $SLURM_TMPDIR

srun $PYTHON train.py --data $SLURM_TMPDIR/d
