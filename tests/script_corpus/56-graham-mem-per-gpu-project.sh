#!/bin/bash
#SBATCH --account=def-cwu
#SBATCH --gres=gpu:v100:1
#SBATCH --cpus-per-task=8
#SBATCH --mem-per-gpu=100G
#SBATCH --time=0-10:00

module load python/3.11
source ~/envs/ts/bin/activate
python train_informer.py --root_path /project/def-cwu/data/electricity --epochs 30
