"""Known-bad: plain PyTorch, no Triton kernel: rejected whatever its output."""
import torch


def gelu(input, approximate="none"):
    return torch.nn.functional.gelu(input, approximate=approximate)
