#!/bin/bash
#SBATCH --job-name=deeplab
#SBATCH --gres=gpu:rtx:2
#SBATCH --cpus-per-task=12
#SBATCH --mem=64G

source ~/envs/seg/bin/activate
python -m torch.distributed.run --nproc_per_node=2 train.py \
    --data /mnt/nas/datasets/cityscapes --epochs 100 --batch-size 8
