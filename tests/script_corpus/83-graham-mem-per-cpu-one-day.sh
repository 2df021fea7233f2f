#!/bin/bash
#SBATCH --account=def-vmorales
#SBATCH --gres=gpu:t4:1
#SBATCH --cpus-per-task=8
#SBATCH --mem-per-cpu=4G
#SBATCH --time=1-00:00
#SBATCH --output=%x-%j.out

set -x
module load StdEnv/2023 python/3.11 cuda

cleanup() {
    cp -r $SLURM_TMPDIR/runs ~/scratch/esc50-runs-$SLURM_JOB_ID || true
}
trap 'cleanup' EXIT

virtualenv --no-download $SLURM_TMPDIR/env
source $SLURM_TMPDIR/env/bin/activate
pip install --no-index --upgrade pip
pip install --no-index -r ~/audio-tagging/requirements.txt
python -c "import torch; assert torch.cuda.is_available(), 'no GPU'"

rsync -a ~/projects/def-vmorales/data/esc50-wav.tar $SLURM_TMPDIR/
tar xf $SLURM_TMPDIR/esc50-wav.tar -C $SLURM_TMPDIR

cd ~/audio-tagging
python train.py --data $SLURM_TMPDIR/ESC-50 --epochs 60 --workers 7 --out $SLURM_TMPDIR/runs
