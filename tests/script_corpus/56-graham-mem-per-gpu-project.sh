#!/bin/bash
#SBATCH --account=def-cwu
#SBATCH --gres=gpu:v100:1
#SBATCH --cpus-per-task=8
#SBATCH --mem-per-gpu=100G
#SBATCH --time=0-10:00

module load python/3.11
source ~/envs/vision/bin/activate
python train_classifier.py --data /project/def-cwu/data/eurosat_rgb --epochs 30 --workers 8
