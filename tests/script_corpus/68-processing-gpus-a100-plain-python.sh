#!/bin/bash
#SBATCH --job-name=convnext-food101
#SBATCH --gpus=a100:2
#SBATCH --cpus-per-task=16
#SBATCH --mem=128G
#SBATCH --time=14:00:00

source ~/venvs/timm/bin/activate

mkdir -p $SCRATCH/food101
tar -xf /project/vision/food-101.tar -C $SCRATCH/food101

python train.py $SCRATCH/food101/food-101 --model convnext_base.fb_in22k --pretrained \
    --num-classes 101 --batch-size 128 --epochs 30 --amp --workers 12 \
    --output /project/vision/runs
