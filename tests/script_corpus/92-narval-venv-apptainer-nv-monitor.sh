#!/bin/bash
#SBATCH --account=def-rtremblay
#SBATCH --gres=gpu:a100:1
#SBATCH --cpus-per-task=12
#SBATCH --mem=124G
#SBATCH --time=0-20:00

module load python/3.11 apptainer
source ~/envs/tools/bin/activate

mkdir -p $SLURM_TMPDIR/data
tar xf ~/projects/def-rtremblay/shared/ade20k.tar -C $SLURM_TMPDIR/data

# GPU use every minute, beside the training
while true; do nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv >> gpu-$SLURM_JOB_ID.csv; sleep 60; done &

apptainer exec --nv --bind $SLURM_TMPDIR/data:/data ~/images/mmseg.sif \
    python tools/train.py configs/segformer_b2_ade20k.py --cfg-options data_root=/data/ade20k

# The report notebook runs from start to end, then the job ends.
jupyter nbconvert --to html --execute report.ipynb
