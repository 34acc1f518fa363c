"""Exact digests of tensors, computed where they live: what a trace stores per value.

A digest covers the dtype, the shape and every bit of the values (not the strides: a copy
digests the same). Two encodings, named in each trace's header:

- ``blake3`` (CPU tensors): BLAKE3 of the raw bytes, cut to 128 bits. Any bit change changes
  it. A contiguous tensor is hashed in place (a view of its memory, no copy).
- ``wsum`` (tensors on an accelerator): the bits are read as integers ``x_i`` and two sums
  ``Σ x_i·w_i mod 2^64`` with odd pseudo-random weights ``w_i`` are taken on the device, then
  hashed with the dtype and shape (16 bytes read back, no host copy of the values). A weight
  is odd, so invertible mod 2^64: a change of any one value always changes both sums;
  several changes cancel in both only with probability about 2^-128. Integer sums wrap and
  are associative, so the digest does not depend on the reduction order (deterministic on
  any device, unlike a float sum, and unlike a plain sum of the bits, which any permutation
  of the values leaves unchanged).

A torch ``Tensor`` is digested; other values (ints, strings, None) are digested by their
``repr``, so a module that returns ``(tensor, None)`` still has one digest.
"""

from __future__ import annotations

from typing import Any

import blake3

__all__ = [
    "DIGEST_HEX",
    "device_sums",
    "digest_bytes",
    "digest_value",
    "finish_device_digest",
    "tensor_bytes",
    "tensor_digest",
]

DIGEST_HEX = 32  # 128 bits, as hex

_M1 = 0x9E3779B97F4A7C15 - (1 << 64)  # golden-ratio and splitmix64 constants, as int64
_M2 = 0xBF58476D1CE4E5B9 - (1 << 64)
_M3 = 0x94D049BB133111EB - (1 << 64)


def digest_bytes(data: bytes | memoryview) -> str:
    return blake3.blake3(data).hexdigest()[:DIGEST_HEX]


def tensor_bytes(t: Any) -> memoryview:
    """The raw bytes of a CPU tensor (a view when it is contiguous, else of a contiguous copy)."""
    import torch

    flat = t.detach().reshape(-1)
    if not flat.is_contiguous():
        flat = flat.contiguous()
    if flat.dtype != torch.uint8:
        flat = flat.view(torch.uint8) if flat.numel() else flat.to(torch.uint8)
    return memoryview(flat.numpy())


def _as_int64(t: Any) -> Any:
    import torch

    flat = t.detach().reshape(-1)
    size = flat.element_size()
    if flat.dtype == torch.bool:
        return flat.to(torch.int64)
    view = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.uint8}.get(size)
    if view is None:  # complex128: 16 bytes as two int64
        return flat.contiguous().view(torch.int64)
    return flat.contiguous().view(view).to(torch.int64)


def device_sums(t: Any) -> Any:
    """Two weighted sums of ``t``'s bits (an int64 tensor of 2 on ``t``'s device)."""
    import torch

    x = _as_int64(t)
    i = torch.arange(1, x.numel() + 1, device=x.device, dtype=torch.int64)
    a = i * _M1
    a = (a ^ (a >> 31)) * _M2  # int64 products wrap mod 2^64
    b = (a ^ (a >> 27)) * _M3
    w1, w2 = a | 1, b | 1
    return torch.stack([(x * w1).sum(), (x * w2).sum()])


def _head(t: Any) -> bytes:
    return f"{t.dtype}|{tuple(t.shape)}|".encode()


def tensor_digest(t: Any, *, on_device: bool | None = None) -> str | tuple[bytes, Any]:
    """A CPU tensor's digest; for a tensor on a device (or with ``on_device``), its header and
    its two sums still on the device, for the caller to read with others in one sync
    (``finish_device_digest``)."""
    if t.is_sparse or t.device.type == "meta":
        return digest_bytes(b"unhashable|" + _head(t))
    device = t.device.type != "cpu" if on_device is None else on_device
    if device:
        return _head(t), device_sums(t)
    h = blake3.blake3(_head(t))
    h.update(tensor_bytes(t))
    return h.hexdigest()[:DIGEST_HEX]


def finish_device_digest(head: bytes, sums: list[int]) -> str:
    return digest_bytes(b"wsum|" + head + repr(sums).encode())


def digest_value(value: Any, *, on_device: bool | None = None) -> str:
    """The digest of a tensor or any other value. ``on_device``: force (True) or refuse
    (False) the ``wsum`` encoding; by default, tensors not on the CPU use it."""
    import torch

    if not isinstance(value, torch.Tensor):
        return digest_bytes(b"repr|" + repr(value).encode("utf-8", "backslashreplace"))
    d = tensor_digest(value, on_device=on_device)
    if isinstance(d, str):
        return d
    return finish_device_digest(d[0], d[1].tolist())
