#!/bin/bash
#SBATCH --account=def-pwright
#SBATCH --gres=gpu:t4:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=32G
#SBATCH --time=0-09:00
#SBATCH --output=%x-%j.out

module load apptainer
mkdir -p $SLURM_TMPDIR/kinetics
tar xf ~/projects/def-pwright/data/kinetics400-mini.tar -C $SLURM_TMPDIR/kinetics

# apptainer reads the binds from the environment
export APPTAINER_BIND="$SLURM_TMPDIR/kinetics:/data,$HOME/scratch/x3d:/runs"
apptainer exec --nv ~/projects/def-pwright/containers/pyslowfast.sif \
    python tools/train_net.py --cfg configs/x3d_s.yaml DATA.PATH_TO_DATA_DIR /data \
    OUTPUT_DIR /runs
