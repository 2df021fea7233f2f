#!/bin/bash
#SBATCH --account=def-sgupta
#SBATCH --gres=gpu:p100:1
#SBATCH --mem=32000M
#SBATCH --time=0-08:00

source ~/miniconda3/etc/profile.d/conda.sh
conda activate torch2

cp ~/projects/def-sgupta/sgupta/svhn.tar $SLURM_TMPDIR/
tar xf $SLURM_TMPDIR/svhn.tar -C $SLURM_TMPDIR
python train.py --dataset $SLURM_TMPDIR/svhn --epochs 40
