#!/bin/bash
#SBATCH --account=rrg-bengio-ad
#SBATCH --nodes=2
#SBATCH --gres=gpu:a100:4
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=12
#SBATCH --mem=480G
#SBATCH --time=0-20:00:00
#SBATCH --output=ddp-%j.out

module load StdEnv/2023 python/3.11

# One virtualenv and one copy of the data on each node.
srun --ntasks $SLURM_NNODES --tasks-per-node=1 bash << EOF
virtualenv --no-download $SLURM_TMPDIR/env
source $SLURM_TMPDIR/env/bin/activate
pip install --no-index --upgrade pip
pip install --no-index -r requirements.txt
EOF
srun --ntasks=$SLURM_NNODES --ntasks-per-node=1 tar -xf ~/projects/def-bengio/data/imagenet.tar -C $SLURM_TMPDIR

source $SLURM_TMPDIR/env/bin/activate
export MASTER_ADDR=$(hostname)
export MASTER_PORT=34567
export NCCL_BLOCKING_WAIT=1

srun python train_ddp.py --data $SLURM_TMPDIR/imagenet \
    --init_method tcp://$MASTER_ADDR:$MASTER_PORT \
    --world_size $SLURM_NTASKS --batch_size 256 --workers 10
