#!/bin/bash
#SBATCH --account=def-hmcdonald
#SBATCH --gres=gpu:t4:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=32G
#SBATCH --time=03:00:00

module load python/3.11
source ~/envs/eval/bin/activate

# Evaluation only: one pass over the test set, read from project.
python evaluate.py \
    --checkpoint ~/projects/def-hmcdonald/runs/effnet/best.pt \
    --data ~/projects/def-hmcdonald/datasets/plantvillage/test \
    --report ~/projects/def-hmcdonald/runs/effnet/test-report.json
