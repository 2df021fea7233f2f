#!/bin/bash
#SBATCH --job-name=resnet50
#SBATCH --gres=gpu:a100:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=64G
#SBATCH --time=12:00:00
#SBATCH --output=logs/%x-%j.out

set -euo pipefail

source ~/venvs/torch/bin/activate

# Copy the images onto the node's SSD first, then train from there.
rsync -a --info=progress2 --delete /project/vision/imagenet-subset/ $SCRATCH/imagenet-subset/

python train.py \
    --data $SCRATCH/imagenet-subset \
    --arch resnet50 \
    --epochs 90 \
    --workers 8 \
    --output /project/vision/runs/$SLURM_JOB_ID

rm -rf $SCRATCH/imagenet-subset
