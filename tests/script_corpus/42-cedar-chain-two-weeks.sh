#!/bin/bash
#SBATCH --account=def-bmorin
#SBATCH --array=1-14%1
#SBATCH --gres=gpu:p100l:1
#SBATCH --cpus-per-task=6
#SBATCH --mem=32000M
#SBATCH --time=1-00:00
#SBATCH --signal=B:USR1@600

module load python/3.10 cuda
source ~/envs/mol/bin/activate

tar xf ~/projects/def-bmorin/qm9.tar -C $SLURM_TMPDIR

RUN=~/scratch/schnet-qm9
mkdir -p $RUN
latest=$(ls -t $RUN/*.pt 2>/dev/null | head -n 1)

resume_args=()
if [[ -n "$latest" ]]; then
    resume_args=(--resume-from "$latest")
fi
python train_schnet.py --data $SLURM_TMPDIR/qm9 --run-dir $RUN "${resume_args[@]}"
