#!/bin/bash
#SBATCH --account=def-pmartin
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=10
#SBATCH --mem=47000M
#SBATCH --time=0-03:00

module load python/3.10 cuda cudnn

virtualenv --no-download $SLURM_TMPDIR/env
source $SLURM_TMPDIR/env/bin/activate
pip install --no-index --upgrade pip
pip install --no-index tensorflow==2.12 pandas

mkdir $SLURM_TMPDIR/data
tar xzf ~/projects/def-pmartin/pmartin/flowers.tar.gz -C $SLURM_TMPDIR/data

python train_keras.py --data_dir $SLURM_TMPDIR/data/flowers --epochs 30 \
    --save_to ~/scratch/keras-flowers
