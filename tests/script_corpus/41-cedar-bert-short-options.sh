#!/bin/bash
#SBATCH -A def-rtaylor
#SBATCH --gres=gpu:v100l:1 -c 6
#SBATCH --mem 32000M
#SBATCH -t 0-06:00   # six hours is plenty
#SBATCH -J bert-ner
#SBATCH -o %x-%j.out

module load python/3.10 arrow
virtualenv --no-download $SLURM_TMPDIR/env
source $SLURM_TMPDIR/env/bin/activate
pip install --no-index transformers datasets evaluate seqeval torch

# the model and the data were copied to project from a login node
cp -r ~/projects/def-rtaylor/models/bert-base-cased $SLURM_TMPDIR/
mkdir $SLURM_TMPDIR/conll
tar xf ~/projects/def-rtaylor/data/conll2003.tar -C $SLURM_TMPDIR/conll

export TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
python run_ner.py \
    --model_name_or_path $SLURM_TMPDIR/bert-base-cased \
    --train_file $SLURM_TMPDIR/conll/train.json \
    --validation_file $SLURM_TMPDIR/conll/valid.json \
    --do_train --do_eval \
    --output_dir ~/scratch/bert-ner
