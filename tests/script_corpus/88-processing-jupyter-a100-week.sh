#!/bin/bash
#SBATCH --job-name=notebook
#SBATCH --gres=gpu:a100:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=64G
#SBATCH --time=7-00:00:00
#SBATCH --output=%x-%j.log

# Work in the notebook all week: connect with
#   ssh -N -L 8888:$(hostname):8888 me@login
source ~/venvs/lab/bin/activate
cd /processing/$USER/thesis

PORT=8888
echo "notebook on $(hostname):$PORT"
jupyter lab --no-browser --ip=0.0.0.0 --port=$PORT
