#!/bin/bash
#SBATCH --job-name=ddp-convnext
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:a100:4
#SBATCH --cpus-per-task=32
#SBATCH --mem=256G
#SBATCH --time=2-00:00:00

set -e

source ~/miniforge3/bin/activate ddp

mkdir -p $SCRATCH/coco
tar -xf /data/shared/coco/train2017.tar -C $SCRATCH/coco

torchrun --standalone --nproc_per_node=4 train.py \
    --data-path $SCRATCH/coco/train2017 \
    --batch-size 64 \
    --workers 8 \
    --output-dir ~/runs/convnext-$SLURM_JOB_ID
