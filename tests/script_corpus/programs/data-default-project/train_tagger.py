"""Audio tagging on 10-second clips: log-mel spectrograms into a small CNN."""

import argparse
from pathlib import Path

import torch
import torch.nn as nn
import torchaudio
from torch.utils.data import DataLoader, Dataset


class Clips(Dataset):
    def __init__(self, folder):
        self.files = sorted(Path(folder).glob("*.flac"))
        self.mel = torchaudio.transforms.MelSpectrogram(sample_rate=16000, n_mels=64)

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        wave, _ = torchaudio.load(self.files[i])
        label = int(self.files[i].stem.split("_")[0])
        return self.mel(wave).log1p(), label


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", default="/project/def-jmorin/shared/audioset-clips")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--out", default="runs")
    args = parser.parse_args()

    loader = DataLoader(Clips(args.data_dir), batch_size=args.batch_size, shuffle=True, num_workers=7)
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 527)
    ).cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
    for epoch in range(args.epochs):
        for spectrograms, labels in loader:
            spectrograms, labels = spectrograms.cuda(), labels.cuda()
            loss = nn.functional.cross_entropy(model(spectrograms), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        torch.save(model.state_dict(), f"{args.out}/tagger-{epoch}.pt")


if __name__ == "__main__":
    main()
