#!/bin/bash
#SBATCH --job-name=t5-summarize
#SBATCH --gres=gpu:rtx:2
#SBATCH --cpus-per-task=12
#SBATCH --mem=64G
#SBATCH --time=16:00:00

python3 -m venv $SCRATCH/t5env
source $SCRATCH/t5env/bin/activate
pip install --upgrade pip
pip install torch transformers datasets accelerate evaluate rouge_score

huggingface-cli download --repo-type dataset EdinburghNLP/xsum --local-dir $SCRATCH/xsum

accelerate launch --multi_gpu --num_processes 2 finetune_t5.py \
    --dataset_dir $SCRATCH/xsum \
    --model_name google/flan-t5-base \
    --output_dir /project/nlp/$USER/flan-t5-xsum
