#!/bin/bash
#SBATCH --account=def-lnguyen
#SBATCH --gres=gpu:v100l:4
#SBATCH --cpus-per-task=32
#SBATCH --mem=128000M
#SBATCH --time=0-20:00

module load python/3.10 cuda
source ~/envs/tune/bin/activate
mkdir -p $SLURM_TMPDIR/cifar
tar xf ~/projects/def-lnguyen/cifar10.tar -C $SLURM_TMPDIR/cifar

# Ray Tune runs four trials at once, one GPU each.
python search.py --data $SLURM_TMPDIR/cifar --trials 32 --results $SCRATCH/ray
