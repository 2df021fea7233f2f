"""Keyword spotting on Speech Commands: a 1-D CNN over log-mel frames, configured from YAML.

accelerate launch accelerate_yaml_audio.py --config configs/kws.yaml
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchaudio
import yaml
from accelerate import Accelerator
from torch.utils.data import DataLoader


class KWSNet(nn.Module):
    def __init__(self, n_mels, n_classes, width):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv1d(n_mels, width, kernel_size=5, padding=2),
            nn.BatchNorm1d(width),
            nn.ReLU(),
            nn.Conv1d(width, width, kernel_size=5, padding=2, bias=False),
            nn.BatchNorm1d(width),
            nn.ReLU(),
            nn.AdaptiveAvgPool1d(1),
        )
        self.fc = nn.Linear(width, n_classes)

    def forward(self, x):
        return self.fc(self.body(x).squeeze(-1))


class MelCommands(torch.utils.data.Dataset):
    def __init__(self, root, subset, labels, n_mels):
        self.ds = torchaudio.datasets.SPEECHCOMMANDS(root, download=True, subset=subset)
        self.labels = {name: i for i, name in enumerate(labels)}
        self.mel = torchaudio.transforms.MelSpectrogram(sample_rate=16000, n_mels=n_mels)

    def __len__(self):
        return len(self.ds)

    def __getitem__(self, i):
        wave, _, label, *_ = self.ds[i]
        wave = F.pad(wave, (0, 16000 - wave.shape[-1]))
        return self.mel(wave).squeeze(0).clamp(min=1e-6).log(), self.labels[label]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True)
    args = parser.parse_args()
    with open(args.config) as fh:
        cfg = yaml.safe_load(fh)

    torch.backends.cuda.matmul.allow_tf32 = True
    accelerator = Accelerator(mixed_precision=cfg["mixed_precision"])
    train_set = MelCommands(cfg["data"]["root"], "training", cfg["labels"], cfg["model"]["n_mels"])
    val_set = MelCommands(cfg["data"]["root"], "validation", cfg["labels"], cfg["model"]["n_mels"])
    train_loader = DataLoader(
        train_set,
        batch_size=cfg["train"]["batch_size"],
        shuffle=True,
        num_workers=cfg["data"]["num_workers"],
        pin_memory=cfg["data"].get("pin_memory", False),
        persistent_workers=True,
        prefetch_factor=4,
    )
    val_loader = DataLoader(val_set, batch_size=256, num_workers=16, pin_memory=True, persistent_workers=True, prefetch_factor=4)

    model = KWSNet(cfg["model"]["n_mels"], len(cfg["labels"]), cfg["model"]["width"])
    if cfg["train"].get("compile", False):
        model = torch.compile(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["train"]["lr"])
    model, optimizer, train_loader, val_loader = accelerator.prepare(model, optimizer, train_loader, val_loader)

    for epoch in range(cfg["train"]["epochs"]):
        model.train()
        for mels, labels in train_loader:
            loss = F.cross_entropy(model(mels), labels)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        model.eval()
        correct = total = 0
        for mels, labels in val_loader:
            preds = model(mels).argmax(-1)
            preds, labels = accelerator.gather_for_metrics((preds, labels))
            correct += (preds == labels).sum().item()
            total += labels.numel()
        accelerator.print(f"epoch {epoch}: val accuracy {correct / total:.4f}")


if __name__ == "__main__":
    main()
