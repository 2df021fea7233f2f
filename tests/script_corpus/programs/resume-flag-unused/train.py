import argparse
import os

import torch
import torch.nn as nn
from torch.utils.data import DataLoader
from torchvision.datasets import Cityscapes
from torchvision.models.segmentation import deeplabv3_resnet50
from torchvision.transforms import v2


def get_args():
    parser = argparse.ArgumentParser(description="semantic segmentation")
    parser.add_argument("--data", required=True)
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--save-dir", default="runs")
    parser.add_argument("--resume", action="store_true", help="continue the last run")
    parser.add_argument("--workers", type=int, default=8)
    return parser.parse_args()


def main():
    args = get_args()
    os.makedirs(args.save_dir, exist_ok=True)
    device = "cuda"
    transform = v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])
    data = Cityscapes(args.data, split="train", target_type="semantic", transforms=transform)
    loader = DataLoader(data, batch_size=8, shuffle=True, num_workers=args.workers, pin_memory=True)
    model = deeplabv3_resnet50(num_classes=19).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loss_fn = nn.CrossEntropyLoss(ignore_index=255)

    for epoch in range(args.epochs):
        model.train()
        for images, masks in loader:
            images, masks = images.to(device), masks.squeeze(1).long().to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(images)["out"], masks)
            loss.backward()
            optimizer.step()
        state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}
        torch.save(state, os.path.join(args.save_dir, "last.pt"))


if __name__ == "__main__":
    main()
