#!/bin/bash
#SBATCH --account=def-ntremblay
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=10
#SBATCH --mem=40G
#SBATCH --time=04:00:00

module load python/3.10
virtualenv --no-download $SLURM_TMPDIR/env
source $SLURM_TMPDIR/env/bin/activate
pip install torch torchvision timm

tar xf ~/projects/def-ntremblay/food101.tar -C $SLURM_TMPDIR
python train.py --data $SLURM_TMPDIR/food101 --model efficientnet_b0
