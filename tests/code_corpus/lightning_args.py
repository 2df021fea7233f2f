"""Plant-disease classification with a timm backbone, Lightning 2 and albumentations.

python lightning_args.py --data /data/plants --devices 2 --precision bf16-mixed
"""
import argparse
import os

import albumentations as A
import cv2
import lightning.pytorch as pl
import numpy as np
import timm
import torch
import torch.nn.functional as F
from albumentations.pytorch import ToTensorV2
from torch.utils.data import DataLoader, Dataset


class LeafDataset(Dataset):
    def __init__(self, root, transform):
        self.items = []
        self.classes = sorted(os.listdir(root))
        for label, name in enumerate(self.classes):
            for fname in os.listdir(os.path.join(root, name)):
                self.items.append((os.path.join(root, name, fname), label))
        self.transform = transform

    def __len__(self):
        return len(self.items)

    def __getitem__(self, idx):
        path, label = self.items[idx]
        image = cv2.cvtColor(cv2.imread(path), cv2.COLOR_BGR2RGB)
        return self.transform(image=image)["image"], label


class LeafData(pl.LightningDataModule):
    def __init__(self, root, batch_size, num_workers, image_size=384):
        super().__init__()
        self.save_hyperparameters()
        self.train_tf = A.Compose([
            A.RandomResizedCrop(image_size, image_size, scale=(0.6, 1.0)),
            A.HorizontalFlip(p=0.5),
            A.RandomBrightnessContrast(p=0.3),
            A.Normalize(),
            ToTensorV2(),
        ])
        self.val_tf = A.Compose([A.Resize(image_size, image_size), A.Normalize(), ToTensorV2()])

    def setup(self, stage=None):
        self.train_set = LeafDataset(os.path.join(self.hparams.root, "train"), self.train_tf)
        self.val_set = LeafDataset(os.path.join(self.hparams.root, "val"), self.val_tf)

    def train_dataloader(self):
        return DataLoader(
            self.train_set,
            batch_size=self.hparams.batch_size,
            shuffle=True,
            num_workers=self.hparams.num_workers,
            pin_memory=True,
            persistent_workers=self.hparams.num_workers > 0,
        )

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=self.hparams.batch_size, num_workers=self.hparams.num_workers, pin_memory=True)


class LeafModel(pl.LightningModule):
    def __init__(self, backbone, num_classes, lr):
        super().__init__()
        self.save_hyperparameters()
        self.net = timm.create_model(backbone, pretrained=True, num_classes=num_classes)

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, _):
        x, y = batch
        loss = F.cross_entropy(self(x), y, label_smoothing=0.1)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, _):
        x, y = batch
        preds = self(x).argmax(1)
        self.log("val_acc", (preds == y).float().mean(), prog_bar=True, sync_dist=True)

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=0.02)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=self.trainer.max_epochs)
        return [opt], [sched]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--backbone", default="convnext_small.fb_in22k")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--strategy", default="auto")
    parser.add_argument("--precision", default="32-true")
    args = parser.parse_args()

    np.random.seed(0)
    data = LeafData(args.data, args.batch_size, args.workers)
    model = LeafModel(args.backbone, num_classes=38, lr=args.lr)
    trainer = pl.Trainer(
        accelerator="gpu",
        devices=args.devices,
        strategy=args.strategy,
        precision=args.precision,
        benchmark=True,
        max_epochs=args.epochs,
    )
    trainer.fit(model, datamodule=data)


if __name__ == "__main__":
    main()
