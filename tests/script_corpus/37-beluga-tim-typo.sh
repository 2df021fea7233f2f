#!/bin/bash
#SBATCH --account=def-ylin
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=6
#SBATCH --mem=20G
#SBATCH --tim=2:00:00

module load python/3.10
source ~/envs/rl/bin/activate
python train_ppo.py --env HalfCheetah-v4 --total-timesteps 2000000
