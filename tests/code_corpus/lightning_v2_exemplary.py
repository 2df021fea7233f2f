"""Sentiment classifier (small transformer encoder) with Lightning 2, following the cluster's advice."""
import argparse

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.set_float32_matmul_precision("medium")


class TokenDataset(Dataset):
    def __init__(self, path):
        blob = torch.load(path)
        self.ids, self.labels = blob["ids"], blob["labels"]

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.ids[i], self.labels[i]


class ReviewData(L.LightningDataModule):
    def __init__(self, train_path, val_path, batch_size=128):
        super().__init__()
        self.train_path, self.val_path, self.batch_size = train_path, val_path, batch_size

    def setup(self, stage):
        self.train_set = TokenDataset(self.train_path)
        self.val_set = TokenDataset(self.val_path)

    def _loader(self, dataset, shuffle):
        return DataLoader(
            dataset,
            batch_size=self.batch_size,
            shuffle=shuffle,
            num_workers=16,
            pin_memory=True,
            persistent_workers=True,
            prefetch_factor=4,
        )

    def train_dataloader(self):
        return self._loader(self.train_set, shuffle=True)

    def val_dataloader(self):
        return self._loader(self.val_set, shuffle=False)


class ReviewClassifier(L.LightningModule):
    def __init__(self, vocab_size=30522, d_model=512, n_layers=6, n_heads=8, lr=3e-4):
        super().__init__()
        self.save_hyperparameters()
        self.embed = nn.Embedding(vocab_size, d_model)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, 4 * d_model, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, n_layers)
        self.head = nn.Linear(d_model, 2)

    def forward(self, ids):
        return self.head(self.encoder(self.embed(ids)).mean(dim=1))

    def training_step(self, batch, batch_idx):
        ids, labels = batch
        loss = F.cross_entropy(self(ids), labels)
        self.log("train/loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        ids, labels = batch
        acc = (self(ids).argmax(-1) == labels).float().mean()
        self.log("val/acc", acc, sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, fused=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--train", default="data/train.pt")
    parser.add_argument("--val", default="data/val.pt")
    args = parser.parse_args()

    data = ReviewData(args.train, args.val)
    model = ReviewClassifier()
    model = torch.compile(model)
    trainer = L.Trainer(
        accelerator="gpu",
        devices=4,
        strategy="ddp",
        precision="bf16-mixed",
        max_epochs=10,
        log_every_n_steps=50,
    )
    trainer.fit(model, datamodule=data)


if __name__ == "__main__":
    main()
