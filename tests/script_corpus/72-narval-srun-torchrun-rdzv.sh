#!/bin/bash
#SBATCH --account=rrg-tgarcia
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=a100:4
#SBATCH --cpus-per-task=48
#SBATCH --mem=480G
#SBATCH --time=0-16:00
#SBATCH --output=%x-%j.out

module load StdEnv/2023 python/3.11 cuda
source ~/envs/vit/bin/activate

# One copy of the shards on each node's local disk.
srun --ntasks=$SLURM_NNODES --ntasks-per-node=1 \
    tar xf ~/projects/def-tgarcia/data/imagenet100-wds.tar -C $SLURM_TMPDIR

head_node=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export OMP_NUM_THREADS=12

# One torchrun per node, four workers each, meeting at the first node.
srun torchrun --nnodes=$SLURM_NNODES --nproc_per_node=4 \
    --rdzv_id=$SLURM_JOB_ID --rdzv_backend=c10d --rdzv_endpoint=$head_node:29500 \
    train_vit.py --data $SLURM_TMPDIR/imagenet100-wds --batch-size 256 --workers 10 \
    --output ~/scratch/vit-b16-$SLURM_JOB_ID
