#!/bin/bash
#SBATCH --account=def-mleclerc
#SBATCH --gres=gpu:v100:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=46G
#SBATCH --time=7-00:01
#SBATCH --output=%x-%j.out

module load StdEnv/2023 python/3.11 cuda
source ~/envs/speech/bin/activate

mkdir $SLURM_TMPDIR/data
tar xf ~/projects/def-mleclerc/librispeech-360.tar -C $SLURM_TMPDIR/data

CKPT_DIR=~/scratch/wav2vec2-ft/ckpt
mkdir -p $CKPT_DIR
# resume from the newest checkpoint when there is one
LAST=$(ls -t $CKPT_DIR/*.pt 2>/dev/null | head -1)
python finetune_ctc.py --data $SLURM_TMPDIR/data/LibriSpeech --save-dir $CKPT_DIR \
    ${LAST:+--resume "$LAST"}
