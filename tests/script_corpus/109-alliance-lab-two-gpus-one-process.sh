#!/bin/bash
#SBATCH --account=portal
#SBATCH --partition=site-alliance
#SBATCH --gres=gpu:a100:2
#SBATCH --cpus-per-task=4
#SBATCH --mem=4000M
#SBATCH --time=0:30:00
module load python
virtualenv --no-download $SLURM_TMPDIR/env
source $SLURM_TMPDIR/env/bin/activate
pip install --no-index torch torchvision
mkdir -p $SLURM_TMPDIR/mnist
tar xf ~/projects/mnist.tar -C $SLURM_TMPDIR/mnist
python mnist.py --data $SLURM_TMPDIR/mnist
