#!/bin/bash
#SBATCH --job-name=embed-corpus
#SBATCH --gres=gpu:2080ti:1
#SBATCH --cpus-per-task=64
#SBATCH --mem=32G
#SBATCH --time=01:00:00

source ~/envs/retrieval/bin/activate
python embed.py --model /project/ir/models/e5-small \
    --input /project/ir/passages.jsonl --output /project/ir/passages.npy --batch-size 512
