#!/bin/bash
#SBATCH --account=def-alavoie
#SBATCH --gres=gpu:v100l:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=32000M
#SBATCH --time=0-12:00
#SBATCH --output=logs/%x-%j.out

module load python/3.11 cuda
source ~/venvs/seg/bin/activate

DATASET=~/projects/def-alavoie/alavoie/cityscapes
LOCAL=$SLURM_TMPDIR/cityscapes

echo "staging $DATASET to $LOCAL"
mkdir -p $LOCAL
rsync -a --info=progress2 $DATSET/ $LOCAL/

python train_segformer.py --data-root $LOCAL --epochs 160 --workers 7 \
    --out ~/scratch/segformer-$SLURM_JOB_ID
