"""A learning-rate and width search for a small CIFAR network, four trials side by side."""

import argparse

import torch
import torch.nn as nn
from ray import tune
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def train_one(config, data=None):
    device = torch.device("cuda")
    images = datasets.CIFAR10(data, train=True, transform=transforms.ToTensor())
    loader = DataLoader(images, batch_size=128, shuffle=True, num_workers=6)
    model = nn.Sequential(
        nn.Conv2d(3, config["width"], 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(config["width"], 10),
    ).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=config["lr"], momentum=0.9)
    for epoch in range(10):
        total = 0.0
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item()
        tune.report({"loss": total / len(loader), "epoch": epoch})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data")
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--results")
    args = parser.parse_args()
    space = {"lr": tune.loguniform(1e-4, 1e-1), "width": tune.choice([32, 64, 128])}
    trainable = tune.with_resources(
        tune.with_parameters(train_one, data=args.data), {"cpu": 8, "gpu": 1}
    )
    tuner = tune.Tuner(
        trainable,
        param_space=space,
        tune_config=tune.TuneConfig(num_samples=args.trials, metric="loss", mode="min"),
        run_config=tune.RunConfig(storage_path=args.results),
    )
    tuner.fit()


if __name__ == "__main__":
    main()
