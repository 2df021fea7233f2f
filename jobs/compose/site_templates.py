"""The site templates the portal starts with; admins edit them and add their own."""

TEMPLATES = [
    {
        "slug": "pytorch-training-1gpu",
        "name": "PyTorch training, one GPU",
        "description": "Trains on one GPU from data staged to node-local storage, with a "
        "virtualenv built on the node from your requirements file.",
        "order": 10,
        "fields": {
            "job_name": "train",
            "workload": "training",
            "gpu_count": 1,
            "modules": "python/3.11 cuda cudnn",
            "environment": "requirements",
            "environment_path": "$HOME/requirements.txt",
            "command": 'python train.py --data "$STAGE_DIR" --output "$RESULTS_DIR" '
            '--checkpoints "$CHECKPOINT_DIR"',
            "results_dir": "$HOME/results/train",
        },
    },
    {
        "slug": "inference",
        "name": "Inference",
        "description": "Runs a trained model over a dataset, reading from network storage "
        "where that is allowed, with an existing virtualenv.",
        "order": 20,
        "fields": {
            "job_name": "infer",
            "workload": "inference",
            "gpu_count": 1,
            "modules": "python/3.11 cuda cudnn",
            "environment": "venv",
            "environment_path": "$HOME/venvs/inference",
            "command": 'python predict.py --input "$STAGE_DIR" --output "$RESULTS_DIR"',
            "results_dir": "$HOME/results/inference",
        },
    },
]
