#!/bin/bash
#SBATCH --account=def-hlee
#SBATCH --gres=gpu:t4:4
#SBATCH --cpus-per-task=16
#SBATCH --mem=160000M
#SBATCH --time=0-12:00

module load python/3.11 cuda
source ~/envs/vision/bin/activate
mkdir -p $SLURM_TMPDIR/imagenette2
tar xf ~/projects/def-hlee/vision/imagenette2.tar -C $SLURM_TMPDIR

# Hydra composes configs/: trainer/four_gpus.yaml asks Lightning for all four GPUs.
python src/train.py data.data_dir=$SLURM_TMPDIR/imagenette2
