import torch
from lightning.pytorch import LightningDataModule, LightningModule
from lightning.pytorch.cli import LightningCLI
from torch.utils.data import DataLoader
from torchvision.datasets import ImageFolder
from torchvision.models import resnet50
from torchvision import transforms


class LandCover(LightningDataModule):
    def __init__(self, root: str = "data", batch_size: int = 8, num_workers: int = 8):
        super().__init__()
        self.root = root
        self.batch_size = batch_size
        self.num_workers = num_workers

    def setup(self, stage=None):
        self.train_set = ImageFolder(self.root, transforms.ToTensor())

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True,
                          num_workers=self.num_workers, persistent_workers=True)


class Classifier(LightningModule):
    def __init__(self, classes: int = 7, lr: float = 1e-4):
        super().__init__()
        self.save_hyperparameters()
        self.net = resnet50(num_classes=classes)

    def training_step(self, batch, batch_idx):
        images, labels = batch
        loss = torch.nn.functional.cross_entropy(self.net(images), labels)
        self.log("train_loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)


if __name__ == "__main__":
    LightningCLI(Classifier, LandCover)
