# ResNet-18 on Narval, one GPU
#!/bin/bash
#SBATCH --account=def-kim
#SBATCH --gres=gpu:a100:1
#SBATCH --cpus-per-task=12
#SBATCH --mem=64G
#SBATCH --time=0-04:00

module load python/3.11
source ~/envs/vision/bin/activate
tar xf ~/projects/def-kim/stl10.tar -C $SLURM_TMPDIR
python train.py --data $SLURM_TMPDIR/stl10 --arch resnet18
