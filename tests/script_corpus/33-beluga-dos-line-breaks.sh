#!/bin/bash
#SBATCH --account=def-lgagnon
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=6
#SBATCH --mem=32000M
#SBATCH --time=0-04:00

module load python/3.10
source ~/envs/nlp/bin/activate

tar xf ~/projects/def-lgagnon/imdb.tar -C $SLURM_TMPDIR
python train_sentiment.py --data $SLURM_TMPDIR/imdb --epochs 5
