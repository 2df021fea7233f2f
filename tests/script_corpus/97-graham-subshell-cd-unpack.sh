#!/bin/bash
#SBATCH --account=def-hnguyen
#SBATCH --gres=gpu:t4:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=32G
#SBATCH --time=0-10:00
#SBATCH --output=%x-%j.out

module load StdEnv/2023 python/3.11 cuda
virtualenv --no-download $SLURM_TMPDIR/env
source $SLURM_TMPDIR/env/bin/activate
pip install --no-index -r ~/lidc-unet/requirements.txt

cd ~/lidc-unet
# unpack the scans on the node's disk
(
    cd $SLURM_TMPDIR
    tar xf ~/projects/def-hnguyen/data/lidc-idri-slices.tar
)

python train_unet.py --data-root lidc-idri-slices/ --epochs 80 --workers 7 \
    --save ~/scratch/lidc-unet-$SLURM_JOB_ID
