#!/bin/bash
#SBATCH --account=def-omartel
#SBATCH --gres=gpu:p100:1
#SBATCH --cpus-per-task=12
#SBATCH --mem=60G
#SBATCH --time=0-14:00
#SBATCH --output=%x-%j.out

module load singularity
mkdir -p $SLURM_TMPDIR/data
tar xf ~/projects/def-omartel/data/nuscenes-mini.tar -C $SLURM_TMPDIR/data

singularity exec --nv \
    -B $SLURM_TMPDIR/data:/data \
    -B ~/scratch/centerpoint:/work \
    ~/projects/def-omartel/containers/mmdet3d.sif \
    python tools/train.py configs/centerpoint_nus.py --cfg-options data_root=/data/nuscenes \
    --work-dir /work
