#!/bin/bash
#SBATCH --account=def-ppoirier
#SBATCH --gres=gpu:v100:1
#SBATCH --cpus-per-task=8
#SBATCH --mem=48G
#SBATCH --time=3-00:00

module load python/3.11 cuda
virtualenv --no-download $SLURM_TMPDIR/env
source $SLURM_TMPDIR/env/bin/activate

git clone https://github.com/example-lab/segformer-lite.git $SLURM_TMPDIR/segformer-lite
pip install --no-index -r $SLURM_TMPDIR/segformer-lite/requirements.txt
pip install --no-index -e $SLURM_TMPDIR/segformer-lite

tar xf ~/projects/def-ppoirier/ade20k.tar -C $SLURM_TMPDIR
cd $SLURM_TMPDIR/segformer-lite
python tools/train.py --data $SLURM_TMPDIR/ADEChallengeData2016 --iters 160000
