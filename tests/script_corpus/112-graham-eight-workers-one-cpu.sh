#!/bin/bash
#SBATCH --account=def-ostrand
#SBATCH --gres=gpu:p100:1
#SBATCH --cpus-per-task=1
#SBATCH --mem=32000M
#SBATCH --time=0-06:00

module load python/3.11 cuda
source ~/envs/birds/bin/activate

mkdir -p $SLURM_TMPDIR/cub
tar xf ~/projects/def-ostrand/datasets/CUB_200_2011.tgz -C $SLURM_TMPDIR/cub
python finetune_cub.py --root $SLURM_TMPDIR/cub/CUB_200_2011 --epochs 30
