#!/bin/bash
#SBATCH --account=def-dcampbell
#SBATCH --gres=gpu:p100:1
#SBATCH --cpus-per-task=6
#SBATCH --mem=32000M
#SBATCH --time=0-06:00

module load apptainer

mkdir -p $SLURM_TMPDIR/data
tar xf ~/projects/def-dcampbell/kvasir.tar -C $SLURM_TMPDIR/data

apptainer pull $SLURM_TMPDIR/pytorch.sif docker://nvcr.io/nvidia/pytorch:24.01-py3
apptainer exec --nv -B $SLURM_TMPDIR/data:/data $SLURM_TMPDIR/pytorch.sif \
    python train.py --data /data/kvasir --epochs 50
