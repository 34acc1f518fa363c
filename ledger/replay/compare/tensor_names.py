"""Which outputs the tensor comparator takes, told by name alone: the registry asks this of
every output file, and must not import numpy (ledger/replay/compare/tensors.py) to answer."""

from __future__ import annotations

__all__ = ["SUFFIXES", "is_tensor_file"]

SUFFIXES = (".pt", ".pth", ".ckpt", ".safetensors", ".npy", ".npz")


def is_tensor_file(name: str) -> bool:
    return name.lower().endswith(SUFFIXES)
