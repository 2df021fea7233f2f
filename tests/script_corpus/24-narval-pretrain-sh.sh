#!/bin/bash
#SBATCH --account=def-lwang
#SBATCH --gres=gpu:a100:4
#SBATCH --cpus-per-task=48
#SBATCH --mem=480G
#SBATCH --time=0-12:00:00

module load StdEnv/2023 python/3.11 cuda
source ~/envs/mae/bin/activate

tar xf ~/projects/def-lwang/data/imagenet100.tar -C $SLURM_TMPDIR
export DATA_DIR=$SLURM_TMPDIR/imagenet100

bash exp/pretrain.sh configs/mae_vitb.yaml
