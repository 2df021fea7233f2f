"""Fashion-MNIST classifier from an older research repository, indented with tabs throughout."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


class SmallNet(nn.Module):
	def __init__(self, classes=10):
		super().__init__()
		self.conv1 = nn.Conv2d(1, 32, 3, padding=1)
		self.bn1 = nn.BatchNorm2d(32)
		self.conv2 = nn.Conv2d(32, 64, 3, padding=1, bias=False)
		self.bn2 = nn.BatchNorm2d(64)
		self.fc = nn.Linear(64 * 7 * 7, classes)

	def forward(self, x):
		x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
		x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
		return self.fc(x.flatten(1))


def evaluate(model, loader, device):
	model.eval()
	correct = 0
	for images, labels in loader:
		images, labels = images.to(device), labels.to(device)
		correct += (model(images).argmax(1) == labels).sum().item()
	return correct / len(loader.dataset)


def main():
	parser = argparse.ArgumentParser()
	parser.add_argument("--epochs", type=int, default=10)
	args = parser.parse_args()
	device = torch.device("cuda")
	tf = transforms.ToTensor()
	train_set = datasets.FashionMNIST("data", train=True, download=True, transform=tf)
	test_set = datasets.FashionMNIST("data", train=False, download=True, transform=tf)
	train_loader = DataLoader(train_set, batch_size=128, shuffle=True, num_workers=8, pin_memory=True, persistent_workers=True, prefetch_factor=4)
	test_loader = DataLoader(test_set, batch_size=512, num_workers=8, pin_memory=True, persistent_workers=True, prefetch_factor=4)
	model = SmallNet().to(device)
	optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
	for epoch in range(args.epochs):
		model.train()
		for images, labels in train_loader:
			images, labels = images.to(device), labels.to(device)
			optimizer.zero_grad()
			loss = F.cross_entropy(model(images), labels)
			loss.backward()
			optimizer.step()
		print(epoch, evaluate(model, test_loader, device))


if __name__ == "__main__":
	main()
