#!/bin/bash
#SBATCH --account=def-oberg
#SBATCH --gres=gpu:v100l:1
#SBATCH --cpus-per-task=6
#SBATCH --mem=32000M
#SBATCH --time=0-04:00

module load python/3.10
virtualenv --no-download ~/ENV
source ~/ENV/bin/activate
pip install --no-index --upgrade pip
pip install --no-index torch torchvision

tar xf ~/projects/def-oberg/caltech101.tar -C $SLURM_TMPDIR
python train.py --data $SLURM_TMPDIR/caltech101
