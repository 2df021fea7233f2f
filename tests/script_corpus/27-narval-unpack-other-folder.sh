#!/bin/bash
#SBATCH --account=def-tnguyen
#SBATCH --gres=gpu:a100:1
#SBATCH --cpus-per-task=12
#SBATCH --mem=64G
#SBATCH --time=0-14:00

module load python/3.11 cuda
source ~/envs/vision/bin/activate

mkdir -p $SLURM_TMPDIR/data
tar -xf ~/projects/def-tnguyen/imagenette.tar -C $SLURM_TMPDIR/data

python train.py --data $SLURM_TMPDIR/imagenette --arch resnet18 --workers 10
