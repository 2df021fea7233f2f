#!/bin/bash
#SBATCH --account=def-jlee
#SBATCH --gres=gpu:a100:1
#SBATCH --cpus-per-task=12
#SBATCH --mem=96000M
#SBATCH --time=0-10:00
#SBATCH --output=%x-%j.out

module load StdEnv/2023 python/3.11 cuda/12.2

virtualenv --no-download $SLURM_TMPDIR/env
source $SLURM_TMPDIR/env/bin/activate
pip install --no-index --upgrade pip
pip install --no-index -r requirements.txt

mkdir $SLURM_TMPDIR/data
tar xf ~/projects/def-jlee/datasets/cifar100.tar -C $SLURM_TMPDIR/data

python train.py --data-dir $SLURM_TMPDIR/data --epochs 200 --num-workers 10 \
    --out ~/scratch/cifar100-$SLURM_JOB_ID
