#!/bin/bash
#SBATCH --account=def-mlefebvre
#SBATCH --gres=gpu:a100:1
#SBATCH --cpus-per-task=12
#SBATCH --mem=124G
#SBATCH --time=0-11:00

module load apptainer

mkdir -p $SLURM_TMPDIR/data
tar xf ~/projects/def-mlefebvre/mlefebvre/coco2017.tar -C $SLURM_TMPDIR/data

IMAGE=~/projects/def-mlefebvre/images/detectron2.sif
apptainer exec \
    -B $SLURM_TMPDIR/data:/datasets \
    $IMAGE \
    python tools/train_net.py --config-file configs/mask_rcnn_R_50_FPN_3x.yaml \
        --num-gpus 1 DATASETS.ROOT /datasets/coco2017 OUTPUT_DIR output
