#!/bin/bash
#SBATCH --account=def-hlee
#SBATCH --array=1-5%1
#SBATCH --gres=gpu:v100l:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=32000M
#SBATCH --time=0-23:00
#SBATCH --output=notebook-%A_%a.out

module load python/3.11 cuda
source ~/envs/nb/bin/activate
mkdir -p $SLURM_TMPDIR/audio
tar xf ~/projects/def-hlee/speech-commands.tar -C $SLURM_TMPDIR/audio
export DATA_ROOT=$SLURM_TMPDIR/audio

# Five days of a notebook's training, run one day at a time.
jupyter nbconvert --to notebook --execute train.ipynb --output trained.ipynb \
    --ExecutePreprocessor.timeout=-1
