#!/bin/bash
#SBATCH --account=def-hnguyen
#SBATCH --gres=gpu:v100l:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=32000M
#SBATCH --time=0-10:00

# The environment was packed on a login node with conda-pack; unpack it on the node.
mkdir -p $SLURM_TMPDIR/env
tar -xzf ~/envs/speech.tar.gz -C $SLURM_TMPDIR/env
source $SLURM_TMPDIR/env/bin/activate
conda-unpack

tar xf ~/projects/def-hnguyen/librispeech-100.tar -C $SLURM_TMPDIR
python train_asr.py --data $SLURM_TMPDIR/librispeech-100 --out ~/scratch/asr-runs/$SLURM_JOB_ID
