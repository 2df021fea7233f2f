#!/bin/bash
#SBATCH --account=def-jmartin
#SBATCH --gres=gpu:v100l:1
#SBATCH --cpus-per-task=8
#SBATCH --mem-per-cpu=4G
#SBATCH --time=0-20:00

module load StdEnv/2023 python/3.11 cuda
source ~/envs/fairseq/bin/activate

mkdir -p $SLURM_TMPDIR/data-bin
tar xf ~/projects/def-jmartin/iwslt14.de-en.bin.tar -C $SLURM_TMPDIR/data-bin

fairseq-train $SLURM_TMPDIR/data-bin/iwslt14.tokenized.de-en \
    --arch transformer_iwslt_de_en --share-decoder-input-output-embed \
    --optimizer adam --lr 5e-4 --lr-scheduler inverse_sqrt --warmup-updates 4000 \
    --max-tokens 4096 --num-workers 8 --fp16 \
    --save-dir ~/scratch/fairseq/iwslt14
