#!/bin/bash
#SBATCH --account=def-kdubois
#SBATCH --nodes=1
#SBATCH --ntasks=2
#SBATCH --gpus-per-task=v100:1
#SBATCH --cpus-per-task=10
#SBATCH --mem-per-gpu=64G
#SBATCH --time=0-10:00

module load StdEnv/2023 python/3.11 cuda
source ~/envs/gnn/bin/activate
tar xf ~/projects/def-kdubois/ogbn-products.tar -C $SLURM_TMPDIR

export MASTER_ADDR=$(hostname)
export MASTER_PORT=29512
srun python train_sage_ddp.py --root $SLURM_TMPDIR/ogbn-products \
    --world-size $SLURM_NTASKS --workers 8 --out ~/scratch/sage-products
