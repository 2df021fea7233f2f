#!/bin/bash
#SBATCH --partition=site-alliance
#SBATCH --gres=gpu:a100:1
#SBATCH --mem-4G
#SBATCH --tim=0:20:00
module load python
echo "on $SLURMD_NODENAME"
#SBATCH --cpus-per-task=2
virtualenv --no-download $SLURM_TMPDIR/env
source $SLURM_TMPDIR/env/bin/activate
pip install --no-index portal_probe
python -c 'import portal_probe; print(portal_probe.VALUE)'
