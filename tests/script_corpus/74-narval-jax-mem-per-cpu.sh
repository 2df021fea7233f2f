#!/bin/bash
#SBATCH --account=def-lchen
#SBATCH --gpus-per-node=a100:1
#SBATCH --cpus-per-task=12
#SBATCH --mem-per-cpu=12G
#SBATCH --time=0-08:00

module load StdEnv/2023 python/3.11 cuda cudnn
virtualenv --no-download $SLURM_TMPDIR/env
source $SLURM_TMPDIR/env/bin/activate
pip install --no-index jax jaxlib flax optax tensorflow-datasets

cp ~/projects/def-lchen/tfds/imagenette.tar $SLURM_TMPDIR/
tar xf $SLURM_TMPDIR/imagenette.tar -C $SLURM_TMPDIR

export XLA_PYTHON_CLIENT_MEM_FRACTION=0.9
python train_flax.py --workdir ~/scratch/flax-imagenette --config configs/resnet50.py \
    --config.data_dir $SLURM_TMPDIR/imagenette
