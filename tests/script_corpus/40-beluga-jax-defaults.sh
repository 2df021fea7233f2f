#!/bin/bash
#SBATCH --account=def-vlaurent
#SBATCH --gres=gpu:v100:1
#SBATCH --mem=32G
#SBATCH --time=0-12:00

module load python/3.10 cuda cudnn
source ~/envs/jax/bin/activate
export XLA_PYTHON_CLIENT_MEM_FRACTION=.9

python train_flax.py --workdir ~/scratch/flax-cifar10 \
    --data_dir ~/projects/def-vlaurent/vlaurent/cifar10
