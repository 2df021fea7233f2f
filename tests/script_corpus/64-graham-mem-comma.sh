#!/bin/bash
#SBATCH --account=def-ebrown
#SBATCH --gres=gpu:t4:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=32,000M
#SBATCH --time=0-05:00

module load python/3.11
source ~/envs/seq/bin/activate
tar xf ~/projects/def-ebrown/protein-families.tar -C $SLURM_TMPDIR
python train_cnn.py --data $SLURM_TMPDIR/protein-families
