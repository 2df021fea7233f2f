#!/bin/bash
#SBATCH --account=def-alavoie
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=2
#SBATCH --gpus-per-task=v100:1
#SBATCH --cpus-per-task=6
#SBATCH --mem-per-cpu=5000M
#SBATCH --time=0-12:00

module load StdEnv/2023 python/3.11 cuda
source ~/envs/pointcloud/bin/activate
tar xf ~/projects/def-alavoie/modelnet40.tar -C $SLURM_TMPDIR

export MASTER_ADDR=$(hostname)
export MASTER_PORT=23456
srun python train_ddp.py --data $SLURM_TMPDIR/modelnet40 --world-size $SLURM_NTASKS \
    --workers 5 --out ~/scratch/pointnet2
