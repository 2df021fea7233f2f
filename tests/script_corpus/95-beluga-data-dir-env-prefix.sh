#!/bin/bash
#SBATCH --account=def-nbouchard
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=10
#SBATCH --mem=47000M
#SBATCH --time=0-06:00

module load python/3.10 cuda cudnn
source ~/envs/moco/bin/activate

SPEECH=/project/def-nbouchard/corpora/librispeech-100h
export HF_HOME=$SLURM_TMPDIR/hf

# The program finds its audio through the environment (os.environ["DATA_DIR"]).
DATA_DIR=$SPEECH WANDB_MODE=offline python pretrain_wav2vec.py \
    --max_steps 20000 --per_device_batch_size 16 --save_dir ~/scratch/w2v-$SLURM_JOB_ID
