#!/bin/bash
#SBATCH --account=def-ahmadi
#SBATCH --nodes=1
#SBATCH --gres=gpu:a100:4
#SBATCH --cpus-per-task=1
#SBATCH --mem=400G
#SBATCH --time=0-12:00

module load python/3.11 cuda
source ~/envs/seg/bin/activate

tar xf ~/projects/def-ahmadi/ade20k.tar -C $SLURM_TMPDIR
torchrun --nproc_per_node=4 train_segformer.py --data-root $SLURM_TMPDIR/ADEChallengeData2016 \
    --num-workers 8 --batch-size 16
