#!/bin/bash
#SBATCH --account=def-pchen
#SBATCH --gres=gpu:v100:1
#SBATCH --cpus-per-task=6
#SBATCH --mem=40G
#SBATCH --time=1-00:00

# Keep a GPU node for a day; ssh into it and run experiments by hand.
ENV_DIR=$HOME/miniconda3/envs/diffusion
source $ENV_DIR/bin/activate

nvidia-smi
hostname
sleep infinity
