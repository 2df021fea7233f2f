#!/bin/bash
#SBATCH --account=def-hlee
#SBATCH --gres=gpu:p100:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=32000M
#SBATCH --time=0-16:00

module load python/3.11 cuda
source ~/envs/vision/bin/activate

python src/train.py trainer.devices=1 trainer.max_epochs=60
