#!/bin/bash
#SBATCH --account=def-mleblanc
#SBATCH --gres=gpu:v100l:1
#SBATCH --cpus-per-task=6
#SBATCH --mem=32000M
#SBATCH --time=0-04:00
module load python/3.10 cuda
#SBATCH --mail-user=m.leblanc@example.ca
#SBATCH --mail-type=END,FAIL

source ~/envs/vae/bin/activate
tar xf ~/projects/def-mleblanc/celeba-64.tar -C $SLURM_TMPDIR
python train_vae.py --data $SLURM_TMPDIR/celeba-64
