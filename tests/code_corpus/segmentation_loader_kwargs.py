"""Road segmentation on Cityscapes-style folders with a DeepLabV3 from torchvision."""
import argparse
import os

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision.models.segmentation import deeplabv3_resnet50

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)

loader_kwargs = {
    "num_workers": 6,
    "pin_memory": True,
    "persistent_workers": True,
    "prefetch_factor": 2,
}


class SegFolder(Dataset):
    def __init__(self, root, split):
        self.images = sorted(os.listdir(os.path.join(root, split, "img")))
        self.root, self.split = root, split

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        name = self.images[i]
        img = np.asarray(Image.open(os.path.join(self.root, self.split, "img", name)).convert("RGB"))
        lbl = np.asarray(Image.open(os.path.join(self.root, self.split, "lbl", name)))
        return torch.from_numpy(img.copy()).permute(2, 0, 1), torch.from_numpy(lbl.astype(np.int64))


def augment_on_gpu(images, labels):
    # Random horizontal flip of the whole batch, on the device.
    if torch.rand(1).item() < 0.5:
        images, labels = images.flip(-1), labels.flip(-1)
    return images, labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default="/data/roads")
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()

    torch.backends.cudnn.benchmark = True
    device = torch.device("cuda")
    mean, std = MEAN.to(device), STD.to(device)

    train_loader = DataLoader(SegFolder(args.root, "train"), batch_size=args.batch_size, shuffle=True, drop_last=True, **loader_kwargs)
    val_loader = DataLoader(SegFolder(args.root, "val"), batch_size=args.batch_size, **loader_kwargs)

    model = deeplabv3_resnet50(weights=None, num_classes=19).to(device, memory_format=torch.channels_last)
    model = torch.compile(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)

    for epoch in range(args.epochs):
        model.train()
        for images, labels in train_loader:
            images = images.to(device, non_blocking=True).float().div_(255)
            labels = labels.to(device, non_blocking=True)
            images, labels = augment_on_gpu(images, labels)
            images = ((images - mean) / std).contiguous(memory_format=torch.channels_last)
            with torch.autocast("cuda", dtype=torch.float16):
                loss = F.cross_entropy(model(images)["out"], labels, ignore_index=255)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

        model.eval()
        inter = union = 0
        with torch.no_grad():
            for images, labels in val_loader:
                images = images.to(device).float().div_(255)
                images = ((images - mean) / std).contiguous(memory_format=torch.channels_last)
                with torch.autocast("cuda", dtype=torch.float16):
                    pred = model(images)["out"].argmax(1)
                labels = labels.to(device)
                inter += ((pred == labels) & (labels != 255)).sum().item()
                union += (labels != 255).sum().item()
        print(f"epoch {epoch}: pixel accuracy {inter / union:.4f}")


if __name__ == "__main__":
    main()
