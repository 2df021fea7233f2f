#!/bin/bash
#SBATCH --account=def-amartin
#SBATCH --gres=gpu:t4:4
#SBATCH --cpus-per-task=16
#SBATCH --mem=160000M
#SBATCH --time=0-10:00

module load python/3.11 cuda arrow
source ~/envs/nlp/bin/activate
tar xf ~/projects/def-amartin/reviews.tar -C $SLURM_TMPDIR

# One process: the Trainer spreads the batch over every GPU it sees.
python finetune.py --data $SLURM_TMPDIR/reviews --output $SCRATCH/reviews-bert
