#!/bin/bash
#SBATCH --account=def-pwong
#SBATCH --nodes=1
#SBATCH --gres=gpu:4
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=6
#SBATCH --mem=192000M
#SBATCH --time=0-12:00

module load python/3.10 cuda
source ~/envs/ddp/bin/activate

srun --ntasks-per-node=1 tar xf ~/projects/def-pwong/cub200.tar -C $SLURM_TMPDIR
export MASTER_ADDR=$(hostname)
srun python train_ddp.py --data $SLURM_TMPDIR/cub200 --dist-url tcp://$MASTER_ADDR:3456
