#!/bin/bash
#SBATCH --job-name=unet3d
#SBATCH --gres=gpu:a6000:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=64G
#SBATCH --time=1-00:00:00

# "stage" the data first
export DATA_ROOT=/scratch-shared/$USER/brats
mkdir -p $DATA_ROOT
rsync -a /project/neuro/brats2021/ $DATA_ROOT/

source ~/envs/monai/bin/activate
python train_unet3d.py --data_root $DATA_ROOT --epochs 200
