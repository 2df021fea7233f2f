#!/bin/bash
#SBATCH --account=def-tsato
#SBATCH --gres=gpu:p100:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=32G
#SBATCH --time=0-06:00

# A fresh environment on the node's fast disk for every job.
source ~/miniconda3/etc/profile.d/conda.sh
conda create -y -p $SLURM_TMPDIR/env python=3.10 pytorch torchvision pytorch-cuda=12.1 \
    -c pytorch -c nvidia
conda activate $SLURM_TMPDIR/env

tar xf ~/projects/def-tsato/stl10.tar -C $SLURM_TMPDIR
python train_simclr.py --data $SLURM_TMPDIR/stl10 --epochs 100 --workers 8 \
    --out ~/scratch/simclr-stl10
