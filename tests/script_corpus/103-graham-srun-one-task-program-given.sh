#!/bin/bash
#SBATCH --account=def-pgagnon
#SBATCH --gres=gpu:t4:4
#SBATCH --cpus-per-task=16
#SBATCH --mem=120G
#SBATCH --time=0-08:00

module load python/3.11 cuda
source ~/envs/det/bin/activate
tar xf ~/projects/def-pgagnon/coco-mini.tar -C $SLURM_TMPDIR

srun python train.py --data $SLURM_TMPDIR/coco-mini --batch-size 16 --workers 12
