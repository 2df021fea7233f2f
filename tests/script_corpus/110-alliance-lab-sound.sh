#!/bin/bash
#SBATCH --account=portal
#SBATCH --partition=site-alliance
#SBATCH --gres=gpu:a100:1
#SBATCH --cpus-per-task=2
#SBATCH --mem=2000M
#SBATCH --time=0:15:00
module load python
virtualenv --no-download $SLURM_TMPDIR/env
source $SLURM_TMPDIR/env/bin/activate
pip install --no-index portal_probe
mkdir -p $SLURM_TMPDIR/data
tar xf ~/projects/probe-data.tar -C $SLURM_TMPDIR/data
python -m portal_probe --data $SLURM_TMPDIR/data
