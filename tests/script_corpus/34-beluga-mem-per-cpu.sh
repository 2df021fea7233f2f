#!/bin/bash
#SBATCH --account=def-cmoreau
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=8
#SBATCH --mem-per-cpu=8000M

module load python/3.10
source ~/envs/tabular/bin/activate
cp ~/projects/def-cmoreau/higgs.parquet $SLURM_TMPDIR/
python train_tabnet.py --data $SLURM_TMPDIR/higgs.parquet
