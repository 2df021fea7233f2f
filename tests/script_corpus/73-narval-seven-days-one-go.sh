#!/bin/bash
#SBATCH --account=def-mokafor
#SBATCH --gres=gpu:a100:1
#SBATCH --cpus-per-task=12
#SBATCH --mem=120000M
#SBATCH --time=7-00:00
#SBATCH --output=%x-%j.out

module load StdEnv/2023 python/3.11 cuda
source ~/envs/diffusion/bin/activate

mkdir $SLURM_TMPDIR/data
tar xf ~/projects/def-mokafor/lsun-church.tar -C $SLURM_TMPDIR/data

# as long as Narval allows, in one go
python train_ddpm.py --data $SLURM_TMPDIR/data/lsun-church --iterations 800000 \
    --out ~/scratch/ddpm-church
