#!/bin/bash
#SBATCH --account=def-rkhan
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=2
#SBATCH --gres=gpu:v100:2
#SBATCH --cpus-per-task=16
#SBATCH --mem=120G
#SBATCH --time=0-20:00

module load StdEnv/2023 python/3.11 cuda
source ~/envs/nemo/bin/activate
mkdir $SLURM_TMPDIR/an4
tar xf ~/projects/def-rkhan/data/an4.tar -C $SLURM_TMPDIR/an4
export HF_HUB_OFFLINE=1

# Lightning under srun: one task per GPU.
srun python speech_to_text_ctc.py --config-path=conf --config-name=conformer_ctc_bpe \
    model.train_ds.manifest_filepath=$SLURM_TMPDIR/an4/train_manifest.json \
    model.validation_ds.manifest_filepath=$SLURM_TMPDIR/an4/test_manifest.json \
    trainer.devices=2 trainer.num_nodes=1 trainer.strategy=ddp trainer.max_epochs=100 \
    exp_manager.exp_dir=$HOME/scratch/nemo-an4
