import os

PROJECT = "/project/def-lchen"
DATA_ROOT = os.path.join(PROJECT, "shared", "inat2021")
CHECKPOINT_DIR = os.path.join(os.environ.get("SCRATCH", "/tmp"), "inat-runs")
IMAGE_SIZE = 224
