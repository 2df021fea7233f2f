#!/bin/bash
#SBATCH --account=def-abenali
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=10
#SBATCH --mem=47000M
#SBATCH --time=3-00:00

module load python/3.10 cuda
source ~/envs/detection/bin/activate

# print a dot every 50000 records so the log shows progress
tar -xf ~/projects/def-abenali/data.tar --checkpoint=.50000 -C $SLURM_TMPDIR
python train_fasterrcnn.py --data $SLURM_TMPDIR/data --epochs 120 --output-dir ~/scratch/frcnn
