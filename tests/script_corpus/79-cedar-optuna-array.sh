#!/bin/bash
#SBATCH --account=def-sroy
#SBATCH --array=1-16%4
#SBATCH --gres=gpu:p100:1
#SBATCH --cpus-per-task=6
#SBATCH --mem=32000M
#SBATCH --time=0-04:00
#SBATCH --output=optuna-%A_%a.out

module load StdEnv/2023 python/3.11
source ~/envs/optuna/bin/activate

mkdir $SLURM_TMPDIR/data
tar xf ~/projects/def-sroy/datasets/uci-har.tar -C $SLURM_TMPDIR/data

# Every array task joins the same study and runs trials until its time is up.
python optuna_worker.py --study-name har-tcn \
    --storage ~/scratch/optuna/har-tcn.journal \
    --data $SLURM_TMPDIR/data/uci-har --timeout 13800 --seed $SLURM_ARRAY_TASK_ID
