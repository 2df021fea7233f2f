#!/bin/bash
#SBATCH --job-name=segment-ct
#SBATCH --gres=gpu:2080ti:1
#SBATCH --cpus-per-task=4
#SBATCH --mem=16G
#SBATCH --time=02:00:00

# Inference only: reading the scans from the network share is fine.
source $HOME/envs/seg/bin/activate
python predict.py \
  --checkpoint /project/radiology/models/unet_best.pt \
  --input /project/radiology/ct_scans/batch_07 \
  --output /project/radiology/predictions/batch_07
