#!/bin/bash
#SBATCH --account=def-kchen
#SBATCH --gres=gpu:a100:4
#SBATCH --cpus-per-task=12
#SBATCH --mem=400G
#SBATCH --time=0-06:00

module load python/3.11 cuda
source ~/venvs/llm/bin/activate
export HF_HUB_OFFLINE=1

# The 70B model does not fit one A100: device_map="auto" spreads its layers over all four.
python generate.py --model ~/projects/def-kchen/models/llama-70b --prompts prompts.jsonl \
    --out $SCRATCH/answers.jsonl
