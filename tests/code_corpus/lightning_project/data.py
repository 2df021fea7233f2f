"""Token windows from pre-tokenized shards, served by a LightningDataModule."""
import os

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset


class TokenWindows(Dataset):
    def __init__(self, path, length):
        self.tokens = np.memmap(path, dtype=np.uint16, mode="r")
        self.length = length

    def __len__(self):
        return (len(self.tokens) - 1) // self.length

    def __getitem__(self, i):
        start = i * self.length
        return torch.from_numpy(self.tokens[start : start + self.length + 1].astype(np.int64))


class ShardData(L.LightningDataModule):
    def __init__(self, folder, length=512, batch_size=32):
        super().__init__()
        self.folder, self.length, self.batch_size = folder, length, batch_size

    def setup(self, stage=None):
        self.train = TokenWindows(os.path.join(self.folder, "train.bin"), self.length)
        self.val = TokenWindows(os.path.join(self.folder, "val.bin"), self.length)

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=self.batch_size, shuffle=True, num_workers=os.cpu_count())

    def val_dataloader(self):
        return DataLoader(
            self.val,
            batch_size=self.batch_size,
            num_workers=4,
            pin_memory=True,
            persistent_workers=True,
            prefetch_factor=4,
        )
