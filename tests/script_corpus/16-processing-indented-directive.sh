#!/bin/bash
#SBATCH --job-name=pointnet
#SBATCH --gres=gpu:rtx:1
#SBATCH --cpus-per-task=6
#SBATCH --time=06:00:00
  #SBATCH --mem=32G

rsync -a /project/3d/modelnet40/ $SCRATCH/modelnet40/
python train_pointnet.py --dataset $SCRATCH/modelnet40 --epochs 250
