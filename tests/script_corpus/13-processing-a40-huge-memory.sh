#!/bin/bash
#SBATCH --job-name=diffusion
#SBATCH --gres=gpu:a40:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=5000000G
#SBATCH --time=18:00:00

rsync -a /project/gen/laion-subset/ $SCRATCH/laion-subset/
source ~/envs/diffusers/bin/activate
python train_text_to_image.py --train_data_dir $SCRATCH/laion-subset \
    --resolution 512 --output_dir ~/sd-finetune
