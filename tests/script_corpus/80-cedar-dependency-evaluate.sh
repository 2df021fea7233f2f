#!/bin/bash
#SBATCH --account=def-ebrown
#SBATCH --dependency=afterok:41837265
#SBATCH --gpus-per-node=v100l:1
#SBATCH --cpus-per-task=6
#SBATCH --mem=32000M
#SBATCH --time=0-02:00
#SBATCH --output=%x-%j.out

module load StdEnv/2023 python/3.11
source ~/envs/asr/bin/activate
export HF_HUB_OFFLINE=1

# Starts once training job 41837265 has ended well: scores its best checkpoint on the test set.
exec python evaluate.py \
    --checkpoint ~/scratch/whisper-small-fr/best \
    --test-shards ~/projects/def-ebrown/data/cv-fr-test.tar \
    --report ~/scratch/whisper-small-fr/test-wer.json
