#!/bin/bash
#SBATCH --job-name=detr
#SBATCH --gres=gpu:a100:1
#SBATCH --cpus-per-task=16
#SBATCH --mem=128G
#SBATCH --time=1-12:00:00

source ~/envs/lightning/bin/activate
python main.py fit --config configs/detr_r50.yaml \
    --data.root /data/shared/voc2012 \
    --trainer.devices 1
