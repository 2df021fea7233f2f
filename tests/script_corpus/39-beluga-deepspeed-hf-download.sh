#!/bin/bash
#SBATCH --account=def-gfortin
#SBATCH --nodes=1
#SBATCH --gres=gpu:v100:4
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=40
#SBATCH --mem=186000M
#SBATCH --time=0-16:00

module load python/3.10 cuda
source ~/envs/deepspeed/bin/activate

huggingface-cli download EleutherAI/pythia-1b --local-dir $SLURM_TMPDIR/pythia-1b

deepspeed --num_gpus 4 finetune_clm.py \
    --deepspeed ds_zero2.json \
    --model_name_or_path $SLURM_TMPDIR/pythia-1b \
    --train_dir ~/projects/def-gfortin/corpora/french_news_shards \
    --per_device_train_batch_size 4 \
    --output_dir ~/scratch/pythia-fr
