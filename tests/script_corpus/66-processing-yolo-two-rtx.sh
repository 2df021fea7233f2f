#!/bin/bash
#SBATCH --job-name=yolov8-dota
#SBATCH --gres=gpu:rtx:2
#SBATCH --cpus-per-task=16
#SBATCH --mem=64G
#SBATCH --time=18:00:00
#SBATCH --output=%x-%j.out

set -euo pipefail
source ~/venvs/yolo/bin/activate

# Tiles and labels onto the node's SSD; the dataset yaml is rewritten to point there.
rsync -a --delete /project/remote-sensing/dota-tiles/ $SCRATCH/dota-tiles/
sed "s#^path:.*#path: $SCRATCH/dota-tiles#" configs/dota.yaml > $SCRATCH/dota.yaml

# device=0,1: ultralytics starts one DDP worker per GPU.
yolo detect train data=$SCRATCH/dota.yaml model=yolov8m.pt epochs=150 imgsz=1024 batch=32 \
    workers=8 device=0,1 project=/project/remote-sensing/runs name=yolov8m-$SLURM_JOB_ID
