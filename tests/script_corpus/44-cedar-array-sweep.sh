#!/bin/bash
#SBATCH --account=def-acote
#SBATCH --array=0-11
#SBATCH --gres=gpu:p100:1
#SBATCH --cpus-per-task=6
#SBATCH --mem=32000M
#SBATCH --time=0-03:00
#SBATCH --output=sweep-%A_%a.out

module load python/3.10
source ~/envs/sweep/bin/activate

tar xf ~/projects/def-acote/fashion-mnist.tar -C $SLURM_TMPDIR

LRS=(0.1 0.05 0.01 0.005)
DROPOUTS=(0.0 0.2 0.5)
LR=${LRS[$((SLURM_ARRAY_TASK_ID % 4))]}
DROPOUT=${DROPOUTS[$((SLURM_ARRAY_TASK_ID / 4))]}

python train.py --data $SLURM_TMPDIR/fashion-mnist --lr $LR --dropout $DROPOUT \
    --out ~/scratch/sweep/run-$SLURM_ARRAY_TASK_ID
