#!/bin/bash
#SBATCH --account=def-gtremblay
#SBATCH --gres=gpu:v100:1
#SBATCH --cpus-per-task=10
#SBATCH --mem=47000M
#SBATCH --time=0-23:50
#SBATCH --signal=B:USR1@300
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=%x-%j.out

module load StdEnv/2023 python/3.11 cuda
source ~/envs/seg/bin/activate

mkdir -p $SLURM_TMPDIR/data
tar xf ~/projects/def-gtremblay/cityscapes.tar -C $SLURM_TMPDIR/data

CKPT=~/scratch/deeplab-cityscapes/last.ckpt
requeue() {
    echo "time limit near: requeueing $SLURM_JOB_ID"
    scontrol requeue $SLURM_JOB_ID
}
trap requeue USR1

resume=()
[ -f "$CKPT" ] && resume=(--resume "$CKPT")
# in the background, so that bash can take the signal while training runs
python train_deeplab.py --data $SLURM_TMPDIR/data/cityscapes --ckpt-path $CKPT "${resume[@]}" &
wait
