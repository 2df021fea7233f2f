#!/bin/bash
#SBATCH -J vit-large
#SBATCH --gres=gpu:a6000:1
#SBATCH -c 12
#SBATCH --mem=96G
#SBATCH -t 3-00:00:00

# conda is what the lab uses here
source ~/miniconda3/etc/profile.d/conda.sh
conda activate vit

DATA=/processing/$USER/places365
mkdir -p $DATA
rsync -a /mnt/nas/datasets/places365/ $DATA/

python train_vit.py --data-dir $DATA --model vit_large_patch16_224 --epochs 300 --amp \
    --output-dir /mnt/nas/users/$USER/vit-large

rm -rf $DATA
