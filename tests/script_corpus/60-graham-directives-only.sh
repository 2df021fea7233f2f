#!/bin/bash
#SBATCH --account=def-fmartel
#SBATCH --gres=gpu:v100:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=32G
#SBATCH --time=03:00:00
#SBATCH --job-name=train-unet
#SBATCH --output=%x-%j.out

# python train.py --data $SLURM_TMPDIR/data   (to do)
