#!/bin/bash
#SBATCH --account=def-pnguyen
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:v100:4
#SBATCH --cpus-per-task=40
#SBATCH --mem=180G
#SBATCH --time=0-12:00
#SBATCH --output=%x-%j.out

module load StdEnv/2020 python/3.10 cuda cudnn

# A virtualenv and the TFRecords on each node.
srun --ntasks=$SLURM_NNODES --ntasks-per-node=1 bash << EOF
virtualenv --no-download $SLURM_TMPDIR/env
source $SLURM_TMPDIR/env/bin/activate
pip install --no-index --upgrade pip
pip install --no-index tensorflow
EOF
srun --ntasks=$SLURM_NNODES --ntasks-per-node=1 \
    tar xf ~/projects/def-pnguyen/tfrecords/eurosat-ms.tar -C $SLURM_TMPDIR

source $SLURM_TMPDIR/env/bin/activate
# One worker per node: tf.distribute.MultiWorkerMirroredStrategy with a SlurmClusterResolver
# mirrors the model over the four V100s of each node.
srun python train_mwms.py --tfrecords $SLURM_TMPDIR/eurosat-ms --global-batch 512 --epochs 40 \
    --model-dir ~/scratch/eurosat-mwms
