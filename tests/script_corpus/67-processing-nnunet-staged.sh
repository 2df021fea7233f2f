#!/bin/bash
#SBATCH --job-name=nnunet-liver
#SBATCH --gres=gpu:rtx:1
#SBATCH --cpus-per-task=12
#SBATCH --mem=64G
#SBATCH --time=2-00:00:00
#SBATCH --output=logs/%x-%j.out

source ~/venvs/nnunet/bin/activate

# nnU-Net reads the preprocessed arrays on every iteration: they go to the node's SSD.
export nnUNet_raw=/project/medseg/nnUNet_raw
export nnUNet_preprocessed=$SCRATCH/nnUNet_preprocessed
export nnUNet_results=/project/medseg/nnUNet_results
export nnUNet_n_proc_DA=10

mkdir -p $nnUNet_preprocessed
rsync -a /project/medseg/nnUNet_preprocessed/Dataset003_Liver $nnUNet_preprocessed/

nnUNetv2_train 3 3d_fullres 0 --npz
