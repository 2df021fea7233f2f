#!/bin/bash
#SBATCH --account=def-lchen
#SBATCH --gres=gpu:a100:1
#SBATCH --cpus-per-task=12
#SBATCH --mem=124500M
#SBATCH --time=0-10:00

module load python/3.11 cuda
source ~/envs/inat/bin/activate
cd ~/code/inat-classifier

# Paths live in config.py.
python train.py --epochs 12 --lr 3e-4
