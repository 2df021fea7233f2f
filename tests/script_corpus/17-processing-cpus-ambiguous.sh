#!/bin/bash
#SBATCH --job-name=yolo
#SBATCH --gres=gpu:rtx:1
#SBATCH --cpus=16
#SBATCH --mem=48G
#SBATCH --time=10:00:00

rsync -a --info=progress2 /project/detection/traffic-signs/ $SCRATCH/traffic-signs/
source ~/envs/yolo/bin/activate
yolo detect train data=$SCRATCH/traffic-signs/data.yaml model=yolov8m.pt epochs=100 workers=14
