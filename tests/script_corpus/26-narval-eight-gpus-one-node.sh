#!/bin/bash
#SBATCH --account=def-ochen
#SBATCH --nodes=1
#SBATCH --gres=gpu:a100:8
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=48
#SBATCH --mem=480G
#SBATCH --time=0-18:00

module load python/3.11
source ~/envs/llm/bin/activate
cp ~/projects/def-ochen/tokens/openwebtext-10k.bin $SLURM_TMPDIR/
torchrun --standalone --nproc_per_node=8 train_gpt.py --data_dir $SLURM_TMPDIR --compile
