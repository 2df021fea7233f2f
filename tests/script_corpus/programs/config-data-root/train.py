import argparse
import os

import torch
from torchvision import datasets, transforms

from config import CHECKPOINT_DIR, DATA_ROOT, IMAGE_SIZE


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--data-root", default=DATA_ROOT)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--workers", type=int, default=int(os.environ.get("SLURM_CPUS_PER_TASK", 4)))
    return p.parse_args()


def main():
    args = get_args()
    tf = transforms.Compose([transforms.RandomResizedCrop(IMAGE_SIZE), transforms.ToTensor()])
    train = datasets.ImageFolder(os.path.join(args.data_root, "train"), tf)
    loader = torch.utils.data.DataLoader(train, batch_size=256, shuffle=True,
                                         num_workers=args.workers, pin_memory=True)
    model = torch.hub.load("pytorch/vision", "efficientnet_b0", num_classes=10000).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        for x, y in loader:
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        torch.save(model.state_dict(), os.path.join(CHECKPOINT_DIR, f"e{epoch}.pt"))


if __name__ == "__main__":
    main()
