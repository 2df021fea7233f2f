#!/bin/bash
#SBATCH --account=def-kpark
##SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=6
#SBATCH --mem=32000M
#SBATCH --time=0-05:00

module load python/3.10
source ~/envs/audio/bin/activate
tar xf ~/projects/def-kpark/urbansound8k.tar -C $SLURM_TMPDIR
python train.py --data $SLURM_TMPDIR/urbansound8k --device cuda
