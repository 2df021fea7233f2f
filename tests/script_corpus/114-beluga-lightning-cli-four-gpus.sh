#!/bin/bash
#SBATCH --account=def-pgagnon
#SBATCH --gres=gpu:v100:4
#SBATCH --cpus-per-task=40
#SBATCH --mem=184000M
#SBATCH --time=0-12:00

module load python/3.10 cuda cudnn
source ~/venvs/seg/bin/activate
mkdir -p $SLURM_TMPDIR/data
tar xf ~/projects/def-pgagnon/pgagnon/landcover.tar -C $SLURM_TMPDIR/data

# One process: the CLI's Trainer takes the node's GPUs.
python cli.py fit --data.root $SLURM_TMPDIR/data/landcover --data.batch_size 16
