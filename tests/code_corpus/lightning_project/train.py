import argparse

import lightning as L
import torch
from lightning.pytorch.callbacks import LearningRateMonitor, ModelCheckpoint

from data import ShardData
from model import TinyLM


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="data/shards")
    parser.add_argument("--max-steps", type=int, default=50_000)
    args = parser.parse_args()

    torch.set_float32_matmul_precision("high")
    model = TinyLM()
    data = ShardData(args.data)
    trainer = L.Trainer(
        accelerator="cuda",
        devices=1,
        precision="16-mixed",
        max_steps=args.max_steps,
        val_check_interval=1000,
        gradient_clip_val=1.0,
        callbacks=[ModelCheckpoint(monitor="val_loss"), LearningRateMonitor()],
    )
    trainer.fit(model, datamodule=data)


if __name__ == "__main__":
    main()
