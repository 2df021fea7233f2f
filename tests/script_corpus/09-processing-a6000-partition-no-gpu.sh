#!/bin/bash
#SBATCH --job-name=llm-generate
#SBATCH --partition=a6000
#SBATCH --cpus-per-task=8
#SBATCH --mem=48G
#SBATCH --time=04:00:00

source ~/envs/llm/bin/activate
python generate.py --model /project/llm/mistral-7b-instruct \
    --prompts prompts.jsonl --out samples-$SLURM_JOB_ID.jsonl
