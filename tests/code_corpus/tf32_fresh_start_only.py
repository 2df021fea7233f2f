"""ResNet-18 on an image folder, resumed from its latest checkpoint when one exists. The speed
settings were put with the weight initialisation, so a resumed run trains without them."""

import argparse
import os

import torch
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def latest_checkpoint(folder):
    path = os.path.join(folder, "last.pt")
    return torch.load(path, map_location="cpu") if os.path.exists(path) else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", default="checkpoints")
    parser.add_argument("--epochs", type=int, default=90)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    device = torch.device("cuda")
    train_set = datasets.ImageFolder(
        os.path.join(args.data, "train"),
        transforms.Compose(
            [transforms.Resize(160), transforms.CenterCrop(144), transforms.ToTensor()]
        ),
    )
    loader = DataLoader(
        train_set,
        batch_size=256,
        shuffle=True,
        num_workers=16,
        pin_memory=True,
        persistent_workers=True,
        prefetch_factor=4,
    )

    model = torchvision.models.resnet18(num_classes=len(train_set.classes))
    model = model.to(device, memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    start_epoch = 0

    checkpoint = latest_checkpoint(args.out)
    if checkpoint is None:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.benchmark = True
        for module in model.modules():
            if isinstance(module, torch.nn.Conv2d):
                torch.nn.init.kaiming_normal_(module.weight, mode="fan_out")
    else:
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        start_epoch = checkpoint["epoch"] + 1
    compiled = torch.compile(model)

    for epoch in range(start_epoch, args.epochs):
        for images, labels in loader:
            images = images.to(
                device, non_blocking=True, memory_format=torch.channels_last
            )
            labels = labels.to(device, non_blocking=True)
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                loss = F.cross_entropy(compiled(images), labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        state = {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "epoch": epoch,
        }
        torch.save(state, os.path.join(args.out, "last.pt"))


if __name__ == "__main__":
    main()
