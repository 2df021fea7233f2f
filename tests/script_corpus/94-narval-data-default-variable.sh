#!/bin/bash
#SBATCH --account=def-rcaron
#SBATCH --gres=gpu:a100:1
#SBATCH --cpus-per-task=12
#SBATCH --mem=96000M
#SBATCH --time=0-08:00
#SBATCH --output=%x-%j.out

# Paths can be overridden at submission: sbatch --export=ALL,LAB_ROOT=... train_detr.sh
LAB_ROOT=${LAB_ROOT:-$HOME/projects/def-rcaron/shared}
COCO=$LAB_ROOT/datasets/coco2017
RUN_DIR=$HOME/scratch/detr-runs/$SLURM_JOB_ID

module load StdEnv/2023 python/3.11 cuda/12.2
virtualenv --no-download $SLURM_TMPDIR/env
source $SLURM_TMPDIR/env/bin/activate
pip install --no-index -r requirements.txt

mkdir -p $RUN_DIR
python train_detr.py --coco_path "${COCO}" --output_dir $RUN_DIR \
    --epochs 50 --batch_size 8 --num_workers 10
