import argparse

import torch
from torch.utils.data import DataLoader
from torchvision.datasets import CocoDetection
from torchvision.models.detection import fasterrcnn_resnet50_fpn
from torchvision.transforms import functional as F

parser = argparse.ArgumentParser()
parser.add_argument("--data")
parser.add_argument("--batch-size", type=int, default=8)
parser.add_argument("--workers", type=int, default=4)
args = parser.parse_args()

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
dataset = CocoDetection(
    f"{args.data}/images", f"{args.data}/annotations.json", transform=F.to_tensor
)
loader = DataLoader(
    dataset,
    batch_size=args.batch_size,
    shuffle=True,
    num_workers=args.workers,
    collate_fn=lambda batch: tuple(zip(*batch)),
)
model = fasterrcnn_resnet50_fpn(num_classes=81).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

for epoch in range(12):
    for images, targets in loader:
        images = [image.to(device) for image in images]
        targets = [{k: torch.as_tensor(v).to(device) for k, v in t.items()} for t in targets]
        loss = sum(model(images, targets).values())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    torch.save(model.state_dict(), f"detector-{epoch}.pt")
