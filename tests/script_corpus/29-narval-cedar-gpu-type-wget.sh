#!/bin/bash
#SBATCH --account=def-mdubois
#SBATCH --gres=gpu:v100l:1   # copied from my Cedar script
#SBATCH --cpus-per-task=6
#SBATCH --mem=32000M
#SBATCH --time=0-05:00

module load python/3.11
source ~/envs/ft/bin/activate

wget -q https://download.pytorch.org/models/resnet50-0676ba61.pth -O $SLURM_TMPDIR/resnet50.pth
tar xf ~/projects/def-mdubois/birds.tar -C $SLURM_TMPDIR
python finetune.py --weights $SLURM_TMPDIR/resnet50.pth --data $SLURM_TMPDIR/birds
