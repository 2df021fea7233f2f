#!/bin/bash
#SBATCH --account=def-rpatel
#SBATCH --gres=gpu:a100:1
#SBATCH --cpus-per-task=12
#SBATCH --mem=100G
#SBATCH --exclusive          # so nobody slows my job down
#SBATCH --time=0-08:00

module load python/3.11
source ~/envs/gnn/bin/activate
cp ~/projects/def-rpatel/ogbn-arxiv.tar $SLURM_TMPDIR/
tar xf $SLURM_TMPDIR/ogbn-arxiv.tar -C $SLURM_TMPDIR
python train_gnn.py --root $SLURM_TMPDIR/ogbn-arxiv --epochs 500
