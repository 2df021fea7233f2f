"""Image captioning: a ResNet encoder and an LSTM decoder in one model, trained with teacher
forcing on (image, caption) pairs. The decoder is built first in the model's constructor."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torch.nn.utils.rnn import pack_padded_sequence
from torch.utils.data import DataLoader

from captions import CaptionDataset, collate_captions


class EncoderCNN(nn.Module):
    def __init__(self, embed):
        super().__init__()
        resnet = torchvision.models.resnet50(weights="IMAGENET1K_V2")
        self.backbone = nn.Sequential(*list(resnet.children())[:-1])
        self.project = nn.Linear(resnet.fc.in_features, embed)

    def forward(self, images):
        return self.project(self.backbone(images).flatten(1))


class DecoderLSTM(nn.Module):
    def __init__(self, embed, hidden, vocab, layers=1):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, layers, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, features, captions, lengths):
        inputs = torch.cat([features.unsqueeze(1), self.embed(captions)], 1)
        packed = pack_padded_sequence(inputs, lengths, batch_first=True)
        hidden, _ = self.lstm(packed)
        return self.out(hidden.data)


class CaptionModel(nn.Module):
    def __init__(self, vocab, embed=256, hidden=512):
        super().__init__()
        self.decoder = DecoderLSTM(embed, hidden, vocab)
        self.encoder = EncoderCNN(embed)

    def forward(self, images, captions, lengths):
        return self.decoder(self.encoder(images), captions, lengths)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--annotations", required=True)
    parser.add_argument("--images", required=True)
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()

    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True
    device = torch.device("cuda")
    dataset = CaptionDataset(args.images, args.annotations)
    loader = DataLoader(
        dataset,
        batch_size=128,
        shuffle=True,
        collate_fn=collate_captions,
        num_workers=16,
        pin_memory=True,
        persistent_workers=True,
        prefetch_factor=4,
    )

    model = CaptionModel(len(dataset.vocab)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

    for epoch in range(args.epochs):
        for images, captions, lengths in loader:
            images = images.to(device, non_blocking=True)
            captions = captions.to(device, non_blocking=True)
            targets = pack_padded_sequence(captions, lengths, batch_first=True).data
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                loss = F.cross_entropy(model(images, captions, lengths), targets)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
