"""Train a CIFAR-10 classifier: every part is built from the Hydra config in configs/."""

import hydra
import lightning as L
from omegaconf import DictConfig


def train(cfg: DictConfig) -> dict:
    if cfg.get("seed"):
        L.seed_everything(cfg.seed, workers=True)

    datamodule: L.LightningDataModule = hydra.utils.instantiate(cfg.data)
    model: L.LightningModule = hydra.utils.instantiate(cfg.model)
    trainer: L.Trainer = hydra.utils.instantiate(cfg.trainer)

    trainer.fit(model=model, datamodule=datamodule, ckpt_path=cfg.get("ckpt_path"))
    return dict(trainer.callback_metrics)


@hydra.main(version_base="1.3", config_path="../configs", config_name="train.yaml")
def main(cfg: DictConfig) -> None:
    metrics = train(cfg)
    print({name: float(value) for name, value in metrics.items()})


if __name__ == "__main__":
    main()
