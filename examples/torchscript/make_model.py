#!/usr/bin/env python3
"""Defines a small image classifier in PyTorch and saves it as TorchScript for Stagecraft.

usage: python3 make_model.py OUT.pt

Stagecraft trains a TorchScript nn.Sequential: each child (nested Sequentials are
flattened) is a layer the planner may cut between, so several small children give it
more places to split the model over devices. The last child returns logits.
"""
import sys

import torch
from torch import nn


def make_model() -> nn.Sequential:
    return nn.Sequential(
        nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)),  # 16 x 16 x 16
        nn.Sequential(nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)),  # 32 x 8 x 8
        nn.Flatten(),
        nn.Linear(32 * 8 * 8, 128),
        nn.ReLU(),
        nn.Linear(128, 10),
    )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    torch.manual_seed(0)
    torch.jit.script(make_model()).save(sys.argv[1])
    print(f"wrote {sys.argv[1]}")
