#!/bin/bash
#SBATCH --account=def-fbouchard
#SBATCH --nodes=1
#SBATCH --gres=gpu:4
#SBATCH --ntasks-per-node=4       # one task per GPU, as Lightning expects under Slurm
#SBATCH --cpus-per-task=10
#SBATCH --mem=186000M
#SBATCH --time=0-23:00

module load python/3.11 cuda
virtualenv --no-download $SLURM_TMPDIR/env
source $SLURM_TMPDIR/env/bin/activate
pip install --no-index -r ~/requirements-lightning.txt

tar xf ~/projects/def-fbouchard/data/eurosat.tar -C $SLURM_TMPDIR

export WANDB_MODE=offline
srun python main.py fit --config configs/eurosat.yaml \
    --data.data_dir $SLURM_TMPDIR/eurosat \
    --trainer.devices 4 --trainer.num_nodes 1 --trainer.strategy ddp
