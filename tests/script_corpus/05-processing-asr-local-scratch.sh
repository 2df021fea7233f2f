#!/bin/bash
#SBATCH --job-name=asr-conformer
#SBATCH --gres=gpu:rtx:1
#SBATCH --cpus-per-task=6
#SBATCH --mem=48G
#SBATCH --time=20:00:00

export LOCAL_SCRATCH=/processing/$USER/$SLURM_JOB_ID
mkdir -p $LOCAL_SCRATCH
trap 'rm -rf $LOCAL_SCRATCH' EXIT

cp /project/speech/librispeech-100h.tar $LOCAL_SCRATCH/
tar -xf $LOCAL_SCRATCH/librispeech-100h.tar -C $LOCAL_SCRATCH

source ~/envs/asr/bin/activate
python train_asr.py --train-dir $LOCAL_SCRATCH/LibriSpeech/train-clean-100 \
    --exp-dir /project/speech/exp/conformer-$SLURM_JOB_ID
