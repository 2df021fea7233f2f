#!/bin/bash
#SBATCH --account=def-jmorin
#SBATCH --gres=gpu:p100:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=32000M
#SBATCH --time=0-16:00

module load python/3.11 cuda
source ~/envs/audio/bin/activate

# The data path is the program's own default.
python train_tagger.py --epochs 40 --batch-size 64 --out $SCRATCH/tagger
