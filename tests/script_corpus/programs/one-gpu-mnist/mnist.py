import argparse

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

parser = argparse.ArgumentParser()
parser.add_argument("--data", required=True)
args = parser.parse_args()

device = torch.device("cuda")
train = datasets.MNIST(args.data, train=True, transform=transforms.ToTensor())
loader = DataLoader(train, batch_size=256, shuffle=True, num_workers=1)
model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)).to(device)
optimizer = torch.optim.Adam(model.parameters())
for epoch in range(5):
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
