#!/bin/bash
#SBATCH --account=def-nlam
#SBATCH --gres=gpu:t4:1
#SBATCH -c 4
#SBATCH --mem=16G
#SBATCH --time=02:00:00

module load python/3.11
source ~/envs/hpo/bin/activate
tar xf ~/projects/def-nlam/cifar10.tar -C $SLURM_TMPDIR

# one line of params.txt per run
PARAMS=$(sed -n "${SLURM_ARRAY_TASK_ID}p" params.txt)
python train.py --data $SLURM_TMPDIR/cifar10 $PARAMS
