#!/bin/bash
#SBATCH --nodes=1
#SBATCH --ntaks-per-node=1
#SBATCH --cpus-per-task=24
#SBATCH --time=1:00:00      # max 24:00:00
#SBATCH --mem=120000M       # max memory/node
#SBATCH --account=def-ncoops_gpu
#SBATCH --gres=gpu:p100:4
#SBATCH --job-name=myjob

module load python/3.10
source ~/envs/trees/bin/activate
tar xf ~/projects/def-ncoops/species_tiles.tar -C $SLURM_TMPDIR
torchrun --nproc_per_node=4 train_species.py --tiles $SLURM_TMPDIR/species_tiles
