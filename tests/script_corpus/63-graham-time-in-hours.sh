#!/bin/bash
#SBATCH --account=def-ialvarez
#SBATCH --gres=gpu:t4:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=32G
#SBATCH --time=24h

module load python/3.11
source ~/envs/ocr/bin/activate
tar xf ~/projects/def-ialvarez/iam-lines.tar -C $SLURM_TMPDIR
python train_crnn.py --data $SLURM_TMPDIR/iam-lines
