#!/bin/bash
#SBATCH --job-name=whisper-ft
#SBATCH --gres=gpu:a100:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=64G
#SBATCH --time=10:00:00
#SBATCH --output=%x-%j.log
#SBATCH --gres=gpu:1          # from the lab template

mkdir -p $SCRATCH/commonvoice
tar -xf /project/speech/commonvoice-nl.tar -C $SCRATCH/commonvoice
source ~/envs/whisper/bin/activate
python finetune_whisper.py --data_dir $SCRATCH/commonvoice --output_dir ~/whisper-nl
