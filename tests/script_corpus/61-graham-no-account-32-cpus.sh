#!/bin/bash
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=32
#SBATCH --mem=64000M
#SBATCH --time=0-06:00

module load python/3.11
source ~/envs/graph/bin/activate
tar xf ~/projects/def-lbeaulieu/reddit-graph.tar -C $SLURM_TMPDIR
python train_graphsage.py --dataset $SLURM_TMPDIR/reddit-graph --num-workers 30
