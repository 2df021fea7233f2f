#!/bin/bash
#SBATCH --account=def-ogagne
#SBATCH --gres=gpu:v100:2
#SBATCH --cpus-per-task=16
#SBATCH --mem=96G
#SBATCH --time=0-10:00

module load python/3.11
source ~/envs/diffusion/bin/activate
tar xf ~/projects/def-ogagne/pokemon-blip.tar -C $SLURM_TMPDIR
export HF_HUB_OFFLINE=1

accelerate launch --num_processes 1 train_unconditional.py \
    --train_data_dir $SLURM_TMPDIR/pokemon-blip --resolution 64 --output_dir ~/scratch/ddpm
