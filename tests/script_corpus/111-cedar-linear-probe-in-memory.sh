#!/bin/bash
#SBATCH --account=def-mbouchard
#SBATCH --gres=gpu:p100:1
#SBATCH --mem=32000M
#SBATCH --time=0-02:00
#SBATCH --job-name=probe

module load python/3.11 cuda
source ~/envs/probe/bin/activate

# Frozen features, computed once: a few GB of float16 arrays.
cp ~/projects/def-mbouchard/mbouchard/clip-features.npz $SLURM_TMPDIR/
python fit_probe.py --features $SLURM_TMPDIR/clip-features.npz --epochs 100
