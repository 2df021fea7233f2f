#!/bin/bash
#SBATCH --job-name=lr-sweep
#SBATCH --gres=gpu:rtx:4
#SBATCH --cpus-per-task=24
#SBATCH --mem=96G
#SBATCH --time=10:00:00

set -euo pipefail

stage() {
    mkdir -p "$SCRATCH/$1"
    rsync -a "/project/audio/$1/" "$SCRATCH/$1/"
}

stage esc50
source ~/envs/audio/bin/activate

# One learning rate per GPU, all four at once.
LRS=(0.1 0.03 0.01 0.003)
for i in 0 1 2 3; do
    CUDA_VISIBLE_DEVICES=$i python train_classifier.py --lr "${LRS[$i]}" \
        --data "$SCRATCH/esc50" --out "runs/lr-${LRS[$i]}" > "log-$i.txt" 2>&1 &
done
wait
