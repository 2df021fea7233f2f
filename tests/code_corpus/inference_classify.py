"""Label a folder of photos with an ImageNet EfficientNet and write predictions.csv."""
import csv
import sys

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms
from torchvision.models import EfficientNet_B0_Weights, efficientnet_b0

folder = sys.argv[1]
weights = EfficientNet_B0_Weights.IMAGENET1K_V1
categories = weights.meta["categories"]

preprocess = transforms.Compose([
    transforms.Resize(256),
    transforms.CenterCrop(224),
    transforms.ToTensor(),
    transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
])
dataset = datasets.ImageFolder(folder, transform=preprocess)
loader = DataLoader(dataset, batch_size=256, num_workers=8, pin_memory=True)

device = torch.device("cuda")
model = efficientnet_b0(weights=weights).to(device)
model.eval()

rows = []
with torch.inference_mode():
    for i, (images, _) in enumerate(loader):
        probs = model(images.to(device, non_blocking=True)).softmax(dim=1)
        top_p, top_i = probs.max(dim=1)
        for j, (p, k) in enumerate(zip(top_p.tolist(), top_i.tolist())):
            path = dataset.samples[i * loader.batch_size + j][0]
            rows.append((path, categories[k], f"{p:.4f}"))

with open("predictions.csv", "w", newline="") as fh:
    csv.writer(fh).writerows([("file", "label", "probability"), *rows])
print(f"wrote {len(rows)} predictions")
