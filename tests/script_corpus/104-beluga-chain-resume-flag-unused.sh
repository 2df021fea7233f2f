#!/bin/bash
#SBATCH --account=def-rtremblay
#SBATCH --array=1-4%1
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=10
#SBATCH --mem=46000M
#SBATCH --time=1-00:00
#SBATCH --output=%x-%A_%a.out

module load python/3.10 cuda cudnn
source ~/venvs/seg/bin/activate
mkdir -p $SLURM_TMPDIR/data
tar xf ~/projects/def-rtremblay/cityscapes-small.tar -C $SLURM_TMPDIR/data

# Four days of training, one day per part: each part is meant to go on from the last.
python train.py --data $SLURM_TMPDIR/data --epochs 200 --save-dir $SCRATCH/seg-runs --resume
