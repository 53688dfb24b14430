#!/usr/bin/env python3
"""Loads the model `stagecraft-cli run --export` wrote and checks it against the untrained one.

usage: python3 load_trained.py UNTRAINED.pt TRAINED.pt

Prints each parameter's name (PyTorch's own, e.g. "0.0.weight"), how far training moved
it, and the trained model's prediction for one image-shaped input.
"""
import sys

import torch


def main(untrained_path: str, trained_path: str) -> None:
    untrained = torch.jit.load(untrained_path)
    trained = torch.jit.load(trained_path)
    before = dict(untrained.named_parameters())
    moved = 0
    for name, value in trained.named_parameters():
        change = (value - before[name]).abs().max().item()
        moved += change > 0
        print(f"{name:14s} {tuple(value.shape)!s:18s} max change {change:.6f}")
    if moved == 0:
        sys.exit("the exported model has the untrained weights")
    trained.eval()
    logits = trained(torch.zeros(1, 3, 32, 32))
    print(f"{moved} of {len(before)} parameters trained; logits for a blank image: {logits.shape[-1]} classes")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
