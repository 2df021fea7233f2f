#!/bin/bash
#SBATCH --account=def-yzhang
#SBATCH --gres=gpu:v100:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=32G
#SBATCH --time=0-12:00

module load apptainer
apptainer exec --nv \
    --bind /project/def-yzhang/datasets/kitti:/data \
    --bind $HOME/mmdet-work:/work \
    ~/containers/mmdet3.sif \
    python tools/train.py configs/kitti_pointpillars.py --data-root /data --work-dir /work/pp
