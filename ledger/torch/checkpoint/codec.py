"""Turn a training state into a JSON skeleton plus a flat list of tensors, and back. No pickle.

Encoding of the skeleton (canonical JSON, so equal states give equal ids):

- ``None``, ``bool``, ``int``, ``str`` and finite ``float`` as themselves;
- non-finite floats as ``{"$float": "nan" | "inf" | "-inf"}``; ``bytes`` as ``{"$bytes": b64}``;
- lists as lists, tuples as ``{"$tuple": [...]}``;
- a dict whose keys are strings not starting with ``$``, already in sorted order, as an object;
  any other dict as ``{"$dict": [[key, value], ...]}`` (order and key types kept), plus
  ``"$ordered": true`` for an OrderedDict and ``"$meta"`` for a module state dict's ``_metadata``;
- a tensor as ``{"$tensor": i}``, ``i`` indexing the shard's tensor list;
- an object with ``state_dict()``/``load_state_dict()`` (module, optimizer, scheduler, scaler,
  StatefulDataLoader, ResumableSampler) as its ``state_dict()``.

Anything else is refused with the key path where it was found.
"""

from __future__ import annotations

import base64
import math
import sys
from collections import OrderedDict
from typing import Any

import torch

from ...errors import UsageError
from ...records.checkpoint import DTYPES

__all__ = ["decode_state", "encode_state", "is_stateful", "tensor_bytes", "torch_dtype"]

_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def is_stateful(value: Any) -> bool:
    return (
        not isinstance(value, torch.Tensor | dict)
        and callable(getattr(value, "state_dict", None))
        and callable(getattr(value, "load_state_dict", None))
    )


def torch_dtype(name: str) -> torch.dtype:
    if name not in DTYPES or not isinstance(getattr(torch, name, None), torch.dtype):
        raise UsageError(f"unsupported tensor dtype {name!r} in checkpoint")
    dtype: torch.dtype = getattr(torch, name)
    return dtype


def _dtype_name(t: torch.Tensor, path: str) -> str:
    name = str(t.dtype).removeprefix("torch.")
    if name not in DTYPES:
        raise UsageError(
            f"tensor at {path} has dtype {t.dtype}, which checkpoints do not store",
            hint="convert it to a plain numeric dtype before saving",
        )
    return name


def tensor_bytes(t: torch.Tensor) -> memoryview:
    """The tensor's bytes, C order, little-endian, on the CPU; no copy when already so."""
    t = t.detach().resolve_conj().resolve_neg()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    if t.numel() == 0:
        return memoryview(b"")
    raw = t.reshape(-1).view(torch.uint8).numpy()
    return raw.data.cast("B")


def _key(path: str, k: Any) -> str:
    return f"{path}/{k}" if path else str(k)


class _Encoder:
    def __init__(self) -> None:
        self.tensors: list[tuple[str, torch.Tensor]] = []

    def encode(self, value: Any, path: str) -> Any:
        if value is None or isinstance(value, bool | str):
            return value
        if isinstance(value, int):
            return int(value)
        if isinstance(value, float):
            if math.isfinite(value):
                return float(value)
            return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
        if isinstance(value, torch.Tensor):
            return self._tensor(value, path)
        if isinstance(value, bytes | bytearray):
            return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
        if isinstance(value, tuple):
            return {"$tuple": [self.encode(v, _key(path, i)) for i, v in enumerate(value)]}
        if isinstance(value, list):
            return [self.encode(v, _key(path, i)) for i, v in enumerate(value)]
        if isinstance(value, dict):
            return self._dict(value, path)
        if is_stateful(value):
            return self.encode(value.state_dict(), path)
        raise UsageError(
            f"cannot checkpoint the {type(value).__module__}.{type(value).__qualname__} at "
            f"{path or '<root>'}: only tensors, plain JSON values, dicts, lists, tuples and "
            "objects with state_dict()/load_state_dict() are stored (never pickle)",
            hint="store its state as plain values or tensors, e.g. convert numpy to torch",
        )

    def _tensor(self, t: torch.Tensor, path: str) -> dict[str, int]:
        if t.layout != torch.strided or t.is_quantized or t.device.type == "meta":
            raise UsageError(
                f"tensor at {path} is {t.layout}/{t.device.type}: only dense tensors are stored",
                hint="convert it with .to_dense() or materialise it first",
            )
        _dtype_name(t, path)
        self.tensors.append((path, t))
        return {"$tensor": len(self.tensors) - 1}

    def _dict(self, d: dict[Any, Any], path: str) -> Any:
        keys = list(d.keys())
        plain = (
            all(isinstance(k, str) and not k.startswith("$") for k in keys)
            and keys == sorted(keys)
            and type(d) is dict
        )
        if plain:
            return {k: self.encode(v, _key(path, k)) for k, v in d.items()}
        pairs = []
        for k, v in d.items():
            if not (k is None or isinstance(k, bool | int | str | float)):
                raise UsageError(
                    f"dict key {k!r} at {path or '<root>'} is a {type(k).__name__}; checkpoint "
                    "dict keys must be str, int, float, bool or None"
                )
            pairs.append([self.encode(k, path), self.encode(v, _key(path, k))])
        out: dict[str, Any] = {"$dict": pairs}
        if isinstance(d, OrderedDict):
            out["$ordered"] = True
        meta = getattr(d, "_metadata", None)
        if meta is not None:
            out["$meta"] = self.encode(meta, _key(path, "_metadata"))
        return out


def encode_state(state: Any) -> tuple[Any, list[tuple[str, torch.Tensor]]]:
    """The JSON skeleton and the tensors (key path, tensor) found in ``state``."""
    if sys.byteorder != "little":
        raise UsageError("checkpoints are written on little-endian hosts only")
    enc = _Encoder()
    skeleton = enc.encode(state, "")
    return skeleton, enc.tensors


def decode_state(skeleton: Any, tensors: list[torch.Tensor]) -> Any:
    """Rebuild the state from its skeleton and the loaded tensors (by index)."""
    if isinstance(skeleton, list):
        return [decode_state(v, tensors) for v in skeleton]
    if not isinstance(skeleton, dict):
        return skeleton
    if "$tensor" in skeleton:
        return tensors[skeleton["$tensor"]]
    if "$float" in skeleton:
        return _FLOATS[skeleton["$float"]]
    if "$bytes" in skeleton:
        return base64.b64decode(skeleton["$bytes"])
    if "$tuple" in skeleton:
        return tuple(decode_state(v, tensors) for v in skeleton["$tuple"])
    if "$dict" in skeleton:
        pairs = [(decode_state(k, tensors), decode_state(v, tensors)) for k, v in skeleton["$dict"]]
        out: dict[Any, Any] = OrderedDict(pairs) if skeleton.get("$ordered") else dict(pairs)
        if "$meta" in skeleton:
            out._metadata = decode_state(skeleton["$meta"], tensors)  # type: ignore[attr-defined]
        return out
    return {k: decode_state(v, tensors) for k, v in skeleton.items()}
