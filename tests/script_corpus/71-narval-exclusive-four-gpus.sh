#!/bin/bash
#SBATCH --account=def-nbouchard
#SBATCH --nodes=1
#SBATCH --exclusive
#SBATCH --gres=gpu:a100:4
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=48
#SBATCH --mem=0
#SBATCH --time=0-22:00
#SBATCH --output=%x-%j.out

module load StdEnv/2023 python/3.11 cuda
virtualenv --no-download $SLURM_TMPDIR/env
source $SLURM_TMPDIR/env/bin/activate
pip install --no-index --upgrade pip
pip install --no-index -r requirements.txt

mkdir $SLURM_TMPDIR/data
tar xf ~/projects/def-nbouchard/datasets/inat2021-mini.tar -C $SLURM_TMPDIR/data

python -c "import torch; print(torch.cuda.device_count(), 'GPUs visible')"
torchrun --standalone --nproc_per_node=4 train.py --data $SLURM_TMPDIR/data/inat2021-mini \
    --workers 11 --epochs 30 --out ~/scratch/inat-$SLURM_JOB_ID
