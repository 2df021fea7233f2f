#!/bin/bash
#SBATCH --account=def-hsingh
#SBATCH --gres=gpu:v100:1
#SBATCH --cpus-per-task=6
#SBATCH --mem=24G
#SBATCH --time=05:00:00

module load python/3.10
source ~/envs/kws/bin/activate

cp ~/projects/def-hsingh/speech_commands_v2.tar $TMPDIR/
tar -xf $TMPDIR/speech_commands_v2.tar -C $TMPDIR
python train_kws.py --dataset-root $TMPDIR/speech_commands_v2 --epochs 60
