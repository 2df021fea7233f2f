#!/bin/bash
#SBATCH --job-name=abmil-camelyon
#SBATCH --gres=gpu:a6000:1
#SBATCH --cpus-per-task=12
#SBATCH --mem=96G
#SBATCH --time=1-00:00:00
#SBATCH --output=%x-%j.out

source ~/venvs/histo/bin/activate

FEATURES=/project/pathology/camelyon16/features-uni
rsync -a --info=progress2 $FEATURES/ $SCRATCH/camelyon16-features/

python train_abmil.py --features-dir $FEATURES --splits splits/camelyon16.csv \
    --epochs 50 --output /project/pathology/runs/abmil-$SLURM_JOB_ID

rm -rf $SCRATCH/camelyon16-features
