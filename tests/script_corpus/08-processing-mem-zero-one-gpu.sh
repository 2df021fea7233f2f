#!/bin/bash
#SBATCH --job-name=gan
#SBATCH --gres=gpu:rtx:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=0              # take all memory, just in case
#SBATCH --time=08:00:00

rsync -a /project/gan/celeba/ $SCRATCH/celeba/
source ~/envs/gan/bin/activate
python train_stylegan.py --data $SCRATCH/celeba --outdir ~/gan-runs
