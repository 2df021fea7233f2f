#!/bin/bash
#SBATCH --account=def-lgagnon
#SBATCH --gres=gpu:t4:2
#SBATCH -G 2
#SBATCH --cpus-per-task=16
#SBATCH --mem=64G
#SBATCH --time=0-09:00

module load StdEnv/2023 python/3.11 cuda
source ~/envs/reid/bin/activate
tar xf ~/projects/def-lgagnon/market1501.tar -C $SLURM_TMPDIR

torchrun --standalone --nproc_per_node=2 train_reid.py --data $SLURM_TMPDIR/Market-1501 \
    --workers 7 --out ~/scratch/reid-market
