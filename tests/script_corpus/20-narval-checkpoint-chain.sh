#!/bin/bash
#SBATCH --account=def-mkhan
#SBATCH --array=1-7%1        # 7 days of training, one day at a time
#SBATCH --gres=gpu:a100:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=64000M
#SBATCH --time=1-00:00:00
#SBATCH --output=wrn-%A_%a.out

module load python/3.11 cuda cudnn
source ~/venvs/wrn/bin/activate

mkdir $SLURM_TMPDIR/data
tar xf ~/projects/def-mkhan/mkhan/tiny-imagenet.tar -C $SLURM_TMPDIR/data

CHECKPOINTS=~/scratch/checkpoints/wrn
mkdir -p $CHECKPOINTS
LAST_CHECKPOINT=$(find $CHECKPOINTS -maxdepth 1 -name '*.pt' -print0 | xargs -r -0 ls -1 -t | head -1)

echo "Chain link $SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_TASK_COUNT"
if [ -z "$LAST_CHECKPOINT" ]; then
    python train.py --data $SLURM_TMPDIR/data --write-checkpoints-to $CHECKPOINTS
else
    python train.py --data $SLURM_TMPDIR/data --load-checkpoint $LAST_CHECKPOINT \
        --write-checkpoints-to $CHECKPOINTS
fi
