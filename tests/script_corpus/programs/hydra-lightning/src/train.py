import hydra
import torch
from omegaconf import DictConfig


@hydra.main(version_base="1.3", config_path="../configs", config_name="train")
def main(cfg: DictConfig) -> None:
    torch.set_float32_matmul_precision("high")
    data = hydra.utils.instantiate(cfg.data)
    model = hydra.utils.instantiate(cfg.model)
    trainer = hydra.utils.instantiate(cfg.trainer)
    trainer.fit(model, datamodule=data)
    trainer.save_checkpoint(f"{cfg.paths.output_dir}/last.ckpt")


if __name__ == "__main__":
    main()
