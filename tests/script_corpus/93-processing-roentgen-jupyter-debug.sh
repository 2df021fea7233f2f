#!/bin/bash
#SBATCH --job-name=debug-nb
#SBATCH --gres=gpu:roentgen:1
#SBATCH --cpus-per-task=6
#SBATCH --mem=32G
#SBATCH --time=0-08:00:00

# Debugging a 40 GB model by hand, on the GPUs meant for it.
source ~/venvs/llm/bin/activate
rsync -a /mnt/nas/datasets/alpaca-small/ $SCRATCH/alpaca-small/
cd $SCRATCH
jupyter lab --no-browser --ip=$(hostname -i) --port=8890
