#!/bin/bash
#SBATCH --account=def-eroux
#SBATCH --gres=gpu:v100:1
#SBATCH --cpus-per-task=10
#SBATCH --mem=46000M
#SBATCH --time=10-00:00:00

module load python/3.10 cuda
source ~/envs/nerf/bin/activate

mkdir -p $SLURM_TMPDIR/scenes
tar xf ~/projects/def-eroux/blender_scenes.tar -C $SLURM_TMPDIR/scenes

CKPT_DIR=~/scratch/nerf/ckpt
if ls $CKPT_DIR/*.ckpt > /dev/null 2>&1; then
    python train_nerf.py --scenes $SLURM_TMPDIR/scenes --ckpt-dir $CKPT_DIR --resume
else
    python train_nerf.py --scenes $SLURM_TMPDIR/scenes --ckpt-dir $CKPT_DIR
fi
