#!/bin/bash
#SBATCH --account=def-mlopez
#SBATCH --gres=gpu:v100l:4
#SBATCH --cpus-per-task=24
#SBATCH --mem=128000M
#SBATCH --time=0-12:00

module load python/3.10 cuda
source ~/envs/swin/bin/activate
tar xf ~/projects/def-mlopez/inat-mini.tar -C $SLURM_TMPDIR

torchrun --nproc_per_node 1 train.py --data-path $SLURM_TMPDIR/inat-mini --batch-size 128
