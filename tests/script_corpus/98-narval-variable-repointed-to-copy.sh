#!/bin/bash
#SBATCH --account=def-sgagnon
#SBATCH --gres=gpu:a100:1
#SBATCH --cpus-per-task=12
#SBATCH --mem=96000M
#SBATCH --time=0-06:00
#SBATCH --output=%x-%j.out

module load StdEnv/2023 python/3.11 cuda/12.2
virtualenv --no-download $SLURM_TMPDIR/env
source $SLURM_TMPDIR/env/bin/activate
pip install --no-index -r requirements.txt

DATA=${DATA:-$HOME/projects/def-sgagnon/datasets/imagenet-100}
mkdir -p $SLURM_TMPDIR/imagenet-100
( cd $SLURM_TMPDIR/imagenet-100 && tar xf $DATA/train.tar && tar xf $DATA/val.tar )
export DATA=$SLURM_TMPDIR/imagenet-100

python train_vit.py --data_dir=${DATA} --epochs 100 --workers 10 \
    --output ~/scratch/vit-in100-$SLURM_JOB_ID
