#!/bin/bash
#SBATCH --job-name=asha-search
#SBATCH --gres=gpu:rtx:4
#SBATCH --cpus-per-task=24
#SBATCH --mem=128G
#SBATCH --time=12:00:00
set -x
#SBATCH --output=logs/%x-%j.out
#SBATCH --mail-type=END,FAIL

source ~/venvs/raytune/bin/activate
rsync -a /project/tabular/higgs/ $SCRATCH/higgs/

# One Ray node with the job's four GPUs; each trial takes one of them.
ray start --head --num-cpus=$SLURM_CPUS_PER_TASK --num-gpus=4 --block &
sleep 30
python tune_asha.py --address auto --data $SCRATCH/higgs --num-samples 64 \
    --cpus-per-trial 6 --gpus-per-trial 1 --storage-path /project/tabular/ray_results
ray stop
