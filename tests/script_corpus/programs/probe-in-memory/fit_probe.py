"""Train a linear classifier on precomputed image embeddings."""
import argparse

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--features", required=True)
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--lr", type=float, default=1e-3)
    args = parser.parse_args()

    device = torch.device("cuda")
    arrays = np.load(args.features)
    x = torch.from_numpy(arrays["train_x"]).float()
    y = torch.from_numpy(arrays["train_y"]).long()
    # Everything already sits in memory: batches are slices, nothing to decode.
    loader = DataLoader(TensorDataset(x, y), batch_size=4096, shuffle=True, pin_memory=True)

    probe = nn.Linear(x.shape[1], int(y.max()) + 1).to(device)
    optimizer = torch.optim.AdamW(probe.parameters(), lr=args.lr)
    for epoch in range(args.epochs):
        for xb, yb in loader:
            xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
            loss = nn.functional.cross_entropy(probe(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(epoch, loss.item())
    torch.save(probe.state_dict(), "probe.pt")


if __name__ == "__main__":
    main()
