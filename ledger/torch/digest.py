"""Exact digests of tensors, computed where they live: what a trace stores per value.

A digest covers the dtype, the shape and every bit of the values (not the strides: a copy
digests the same). Two encodings; a trace's header names the device its parameters were on,
and traces taken on different kinds of device are not compared:

- CPU tensors: BLAKE3 of the raw bytes, cut to 128 bits. Any bit change changes it. A
  contiguous tensor is hashed in place (a view of its memory, no copy).
- Tensors on an accelerator (``wsum``): the bits are read as integers ``x_i`` (lanes of at
  most 32 bits) and two sums ``Σ x_i·w_i mod 2^64`` with odd pseudo-random weights ``w_i``
  are taken on the device, then hashed with the dtype and shape: 16 bytes are read back per
  tensor, in one device sync per traced step, and the values are never copied to the host.
  A weight is odd, so invertible mod 2^64: a change of any one value always changes both
  sums, and two different changes of one bit never give the same sums; several changes
  cancel in both only with probability about 2^-128. Integer sums wrap and are associative,
  so the digest does not depend on the reduction order (the same on any run, unlike a float
  sum, and unlike a plain sum of the bits, which a permutation of the values leaves
  unchanged). The tests check this encoding on CPU tensors by forcing it.

A torch ``Tensor`` is digested; other values (ints, strings, None) are digested by their
``repr``, so a module that returns ``(tensor, None)`` still has one digest.
"""

from __future__ import annotations

from typing import Any

import blake3

__all__ = [
    "DIGEST_HEX",
    "as_int64",
    "device_sums",
    "digest_bytes",
    "digest_value",
    "finish_device_digest",
    "rng_digests",
    "tensor_bytes",
    "tensor_digest",
    "weights",
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
    # Lanes of at most 32 bits: a change δ of one lane is then below 2^32 in size, so δ·w
    # keeps δ's lowest set bit and two changes of other bits never cancel (a 64-bit lane's
    # top bit, δ = 2^63, would give the same δ·w for every odd w).
    view = torch.int32 if size >= 4 else {2: torch.int16, 1: torch.uint8}[size]
    return flat.contiguous().view(view).to(torch.int64)


def weights(n: int, device: Any) -> tuple[Any, Any]:
    """The two odd int64 weights of positions 0..n-1 (splitmix64-like mixing of the position)."""
    import torch

    i = torch.arange(1, n + 1, device=device, dtype=torch.int64)
    a = i * _M1
    a = (a ^ (a >> 31)) * _M2  # int64 products wrap mod 2^64
    b = (a ^ (a >> 27)) * _M3
    return a | 1, b | 1


def as_int64(t: Any) -> Any:
    """The bits of each value of ``t`` as an int64 (sign-extended from its width)."""
    return _as_int64(t)


def device_sums(t: Any) -> Any:
    """Two weighted sums of ``t``'s bits (an int64 tensor of 2 on ``t``'s device)."""
    import torch

    x = _as_int64(t)
    w1, w2 = weights(x.numel(), x.device)
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


def rng_digests() -> dict[str, str]:
    """A digest of each RNG the process holds: torch CPU, each CUDA device, Python, numpy."""
    import random
    import sys

    import torch

    out = {
        "torch": digest_bytes(tensor_bytes(torch.get_rng_state())),
        "python": digest_bytes(repr(random.getstate()).encode()),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        out["cuda"] = digest_bytes(
            b"".join(bytes(tensor_bytes(s)) for s in torch.cuda.get_rng_state_all())
        )
    np = sys.modules.get("numpy")
    if np is not None:
        state = np.random.get_state()
        out["numpy"] = digest_bytes(bytes(state[1].data) + repr(state[2:]).encode())
    return out
