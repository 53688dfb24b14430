#!/usr/bin/env python3
"""Writes the TorchScript files the TorchScript tests train (tests/worker/runtime_torchscript_test.cpp).

usage: torchscript_models.py OUTDIR

  mlp.pt            scripted nn.Sequential with a nested Sequential, input 16, 4 classes
  cnn.pt            traced nn.Sequential of convolutions, input 3,8,8, 10 classes
  not_sequential.pt a scripted module that is not an nn.Sequential
  dropout.pt        scripted nn.Sequential with dropout, input 16, 4 classes
"""
import sys

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc(x)


def main(out):
    torch.manual_seed(3)
    mlp = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Sequential(nn.Linear(32, 32), nn.Tanh()), nn.Linear(32, 4))
    torch.jit.script(mlp).save(f"{out}/mlp.pt")
    cnn = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 4 * 4, 10))
    torch.jit.trace(cnn, torch.randn(2, 3, 8, 8)).save(f"{out}/cnn.pt")
    torch.jit.script(Net()).save(f"{out}/not_sequential.pt")
    dropout = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Dropout(0.5), nn.Linear(64, 4))
    torch.jit.script(dropout).save(f"{out}/dropout.pt")


if __name__ == "__main__":
    main(sys.argv[1])
