#!/bin/bash
#SBATCH --account=def-aroberts
#SBATCH --gres=gpu:p100:2
#SBATCH --cpus-per-task=16
#SBATCH --mem=120G
#SBATCH --time=0-18:00

module load python/3.11 arrow
virtualenv --no-download $SLURM_TMPDIR/env
source $SLURM_TMPDIR/env/bin/activate
pip install --no-index transformers datasets accelerate torch

cp ~/projects/def-aroberts/corpora/pubmed-abstracts-1m.txt $SLURM_TMPDIR/
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1

# The Trainer spreads each batch over both GPUs of the node.
srun python run_mlm.py \
    --model_name_or_path ~/projects/def-aroberts/models/distilroberta-base \
    --train_file $SLURM_TMPDIR/pubmed-abstracts-1m.txt \
    --per_device_train_batch_size 32 \
    --do_train \
    --dataloader_num_workers 6 \
    --output_dir ~/scratch/mlm-pubmed
