"""Tensor files (.pt/.pth/.ckpt, .safetensors, .npy, .npz), compared tensor by tensor.

Never by the file's bytes: a ``torch.save`` archive embeds its own file name. Nothing is ever
unpickled beyond ``torch.load(weights_only=True)`` and ``numpy.load(allow_pickle=False)``; a file
those refuse is reported "not comparable", never loaded another way.
"""

from __future__ import annotations

import pickle
import re
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from ...records.verdict_parts import CompareSettings, Difference, FileComparison
from ...stats import compare_arrays
from ._common import NotComparable, ValueTally, relative, short_repr, tolerance_for
from .tensor_names import SUFFIXES, is_tensor_file

__all__ = [
    "SUFFIXES",
    "TensorData",
    "compare_tensor_files",
    "compare_tensor_pair",
    "is_tensor_file",
    "load_tensor_file",
    "tensor_from_torch",
]

_NOTE_KEYS = 10


@dataclass(frozen=True)
class TensorData:
    """A tensor as numpy: ``bits`` holds its raw bytes, ``values`` numbers for tolerance.

    They are the same array unless numpy lacks the dtype (bfloat16, float8): then ``bits`` is
    an integer view and ``values`` an exact float32 upcast (None if there is none).
    """

    dtype: str
    bits: npt.NDArray[Any]
    values: npt.NDArray[Any] | None

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.bits.shape)


def _root(key: str) -> str:
    return key or "(root)"


def _from_numpy(arr: npt.NDArray[Any]) -> TensorData:
    return TensorData(arr.dtype.name, arr, arr if arr.dtype.kind in "biufc" else None)


def tensor_from_torch(t: Any) -> TensorData:
    import torch

    t = t.detach().cpu()
    if t.is_quantized:
        raise NotComparable(f"quantized tensors ({t.dtype}) are not supported")
    if t.layout != torch.strided:
        t = t.to_dense()
    name = str(t.dtype).removeprefix("torch.")
    t = t.contiguous()
    try:
        return _from_numpy(t.numpy())
    except TypeError:  # a dtype numpy lacks: keep its bits, compare values upcast exactly
        pass
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    bits = t.view(ints[t.element_size()]).numpy()
    wide = torch.complex64 if t.is_complex() else torch.float32
    values = t.to(wide).numpy() if (t.is_floating_point() or t.is_complex()) else None
    return TensorData(name, bits, values)


def _flatten(obj: Any, key: str, out: dict[str, Any], convert: Callable[[Any], Any]) -> None:
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            _flatten(v, f"{key}.{k}" if key else str(k), out, convert)
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            _flatten(v, f"{key}[{i}]", out, convert)
    else:
        out[key] = convert(obj)


_REFUSAL = re.compile(r"WeightsUnpickler error: ([^\n]*?)(?: was not an allowed|\n|$)")


def _load_torch(path: Path) -> dict[str, Any]:
    import torch

    with open(path, "rb") as f:
        head = f.read(2)
    if not zipfile.is_zipfile(path) and not head.startswith(b"\x80"):
        raise NotComparable(f"{path.name} is not a torch.save file")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        m = _REFUSAL.search(str(e))
        why = m.group(1) if m else "it holds objects other than tensors and plain data"
        raise NotComparable(
            f"cannot compare safely: torch.load(weights_only=True) refused {path.name} ({why}); "
            "ledger never unpickles arbitrary objects"
        ) from None
    except Exception as e:
        raise NotComparable(f"cannot read {path.name}: {type(e).__name__}: {e}") from None
    out: dict[str, Any] = {}
    _flatten(obj, "", out, lambda v: tensor_from_torch(v) if isinstance(v, torch.Tensor) else v)
    return out


def _load_safetensors(path: Path) -> dict[str, Any]:
    from safetensors import safe_open

    try:
        import torch  # noqa: F401 - bf16 needs the torch framework

        framework = "pt"
    except ImportError:  # pragma: no cover - torch is part of the [torch] extra
        framework = "np"
    out: dict[str, Any] = {}
    try:
        with safe_open(str(path), framework=framework) as f:
            for key in f.keys():  # noqa: SIM118 - safe_open is not a Mapping
                t = f.get_tensor(key)
                out[key] = tensor_from_torch(t) if framework == "pt" else _from_numpy(t)
            for key, value in sorted((f.metadata() or {}).items()):
                out[f"__metadata__.{key}"] = value
    except Exception as e:
        raise NotComparable(f"cannot read {path.name}: {type(e).__name__}: {e}") from None
    return out


def _numpy_refusal(path: Path, member: str | None, e: ValueError) -> NotComparable:
    text = str(e)
    if "pickle" in text or "object" in text.lower():
        what = f"member {member!r} of {path.name}" if member else path.name
        return NotComparable(
            f"cannot compare safely: {what} holds pickled Python objects (dtype object), "
            "which numpy.load(allow_pickle=False) refuses; ledger never unpickles"
        )
    return NotComparable(f"cannot read {path.name}: {text}")


def _load_npy(path: Path) -> dict[str, Any]:
    try:
        arr = np.load(path, allow_pickle=False, mmap_mode="r")
    except ValueError as e:
        raise _numpy_refusal(path, None, e) from None
    except (OSError, EOFError) as e:  # EOFError: an empty file
        raise NotComparable(f"cannot read {path.name}: {e}") from None
    return {"": _from_numpy(np.asarray(arr))}


def _load_npz(path: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        # Our own handle: numpy leaks the one it opens when the archive is broken.
        with open(path, "rb") as f:
            z = np.load(f, allow_pickle=False)
            if not isinstance(z, np.lib.npyio.NpzFile):  # an .npy under an .npz name
                raise NotComparable(f"{path.name} is not an .npz archive")
            with z:
                for member in z.files:
                    try:
                        out[member] = _from_numpy(z[member])
                    except ValueError as e:
                        raise _numpy_refusal(path, member, e) from None
    except ValueError as e:
        raise _numpy_refusal(path, None, e) from None
    except (OSError, EOFError, zipfile.BadZipFile) as e:
        raise NotComparable(f"cannot read {path.name}: {e}") from None
    return out


_LOADERS: dict[str, Callable[[Path], dict[str, Any]]] = {
    ".safetensors": _load_safetensors,
    ".npy": _load_npy,
    ".npz": _load_npz,
}


def load_tensor_file(path: Path) -> dict[str, Any]:
    """Flat ``key -> TensorData | plain value`` (nested keys joined with "." and "[i]")."""
    return _LOADERS.get(path.suffix.lower(), _load_torch)(path)


def _keys(a: Mapping[str, Any], b: Mapping[str, Any]) -> Iterator[str]:
    yield from a
    yield from (k for k in b if k not in a)


def compare_tensor_files(original: Path, replay: Path, settings: CompareSettings) -> FileComparison:
    """Tensor by tensor in the original's key order; the first differing key is reported."""
    a, b = load_tensor_file(original), load_tensor_file(replay)
    tally = ValueTally(settings, unit="elements")
    differing: list[str] = []
    tensors = 0
    for key in _keys(a, b):
        if key not in b or key not in a:
            tally.structural(_root(key), "original" if key in a else "replay")
            differing.append(_root(key))
            continue
        x, y = a[key], b[key]
        if isinstance(x, TensorData) and isinstance(y, TensorData):
            tensors += 1
            if not compare_tensor_pair(_root(key), x, y, tally):
                differing.append(_root(key))
        elif isinstance(x, TensorData) or isinstance(y, TensorData):
            tally.value(_root(key), _describe(x), _describe(y), [key])
            differing.append(_root(key))
        elif tally.skip(key.rsplit(".", 1)[-1], key):
            continue  # a timing kept beside the tensors (Lightning's Timer state)
        else:
            before = tally.mismatches
            tally.value(_root(key), x, y, [key, key.rsplit(".", 1)[-1]])
            if tally.mismatches > before:
                differing.append(_root(key))
    if differing:
        shown = ", ".join(differing[:_NOTE_KEYS]) + (", ..." if len(differing) > _NOTE_KEYS else "")
        tally.notes.append(f"{len(differing)} of {len(set(a) | set(b))} keys differ: {shown}")
    tally.notes.append(f"{tensors} tensors compared")
    return tally.result(original.name, "tensors")


def _describe(value: Any) -> str:
    if isinstance(value, TensorData):
        return f"tensor({value.dtype}, shape={list(value.shape)})"
    return short_repr(value)


def compare_tensor_pair(
    key: str, x: TensorData, y: TensorData, tally: ValueTally, names: Sequence[str] = ()
) -> bool:
    """Add one tensor pair to the tally; True when it matches (bitwise or within tolerance).

    ``names`` are what tolerance overrides may match (default: the key and its last part).
    """
    size = int(x.bits.size)
    if x.dtype != y.dtype or x.shape != y.shape:
        tally.total += size
        tally.mismatches += max(size, 1)
        what: Literal["dtype", "shape"] = "dtype" if x.dtype != y.dtype else "shape"
        orig = x.dtype if what == "dtype" else str(list(x.shape))
        rep = y.dtype if what == "dtype" else str(list(y.shape))
        tally.difference(
            Difference(
                kind=what,
                description=f"tensor {key}: {what} {orig} != {rep}",
                key=key,
                original=orig,
                replay=rep,
            )
        )
        return False
    tally.total += size
    if _same_bits(x.bits, y.bits):
        return True
    tol = tolerance_for(tally.settings, names or [key, key.rsplit(".", 1)[-1]], x.dtype)
    if x.values is None or y.values is None:
        return _compare_raw(key, x, y, tally)
    if tol is None:
        r = compare_arrays(x.values, y.values, bitwise=True)
    else:
        r = compare_arrays(x.values, y.values, rtol=tol.rtol, atol=tol.atol)
    if r.ok:
        tally.inexact += 1
        return True
    tally.mismatches += r.mismatches or 0
    index = r.max_diff_index or ()
    o, p = x.values[index].item(), y.values[index].item()
    abs_diff = r.max_abs_diff if r.max_abs_diff is not None else float("nan")
    ref = abs(o) if isinstance(o, complex) else float(o)
    tol_text = "bitwise" if tol is None else f"rtol {tol.rtol:g}, atol {tol.atol:g}"
    tally.difference(
        Difference(
            kind="value",
            description=(
                f"tensor {key}: {r.mismatches} of {size} elements differ ({tol_text}); "
                f"largest at {list(index)}: {o!r} vs {p!r}"
            ),
            key=key,
            index=list(index),
            first_index=list(r.first_mismatch) if r.first_mismatch is not None else None,
            original=repr(o),
            replay=repr(p),
            abs_diff=abs_diff,
            rel_diff=relative(abs_diff, ref),
            rtol=None if tol is None else tol.rtol,
            atol=None if tol is None else tol.atol,
        )
    )
    return False


def _same_bits(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> bool:
    if a.dtype != b.dtype:
        return False
    va = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    vb = np.ascontiguousarray(b).reshape(-1).view(np.uint8)
    return bool(np.array_equal(va, vb))


def _unequal_elements(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    """Element by element, by bytes: ``!=`` would call a record's 0.0 and -0.0 equal and two
    NaT datetimes different. Padding between a record's fields is no data, so it is dropped."""
    from numpy.lib.recfunctions import repack_fields

    a, b = repack_fields(a), repack_fields(b)
    size = a.dtype.itemsize  # 0 for a record without fields: no bytes, all equal
    va = np.ascontiguousarray(a).reshape(-1).view(np.uint8).reshape((*a.shape, size))
    vb = np.ascontiguousarray(b).reshape(-1).view(np.uint8).reshape((*b.shape, size))
    return np.asarray((va != vb).any(axis=-1))


def _compare_raw(key: str, x: TensorData, y: TensorData, tally: ValueTally) -> bool:
    """Arrays without numbers (strings, records): element by element, exactly."""
    if x.bits.dtype.kind in "biufc":
        r = compare_arrays(x.bits, y.bits, bitwise=True)
        bad_count, first = r.mismatches or 0, r.first_mismatch
    else:
        bad = _unequal_elements(x.bits, y.bits)
        flat = np.flatnonzero(bad)
        bad_count = int(flat.size)
        first = (
            tuple(int(i) for i in np.unravel_index(int(flat[0]), x.shape)) if flat.size else None
        )
    if bad_count == 0 or first is None:
        return True
    tally.mismatches += bad_count
    o, p = x.bits[first].item(), y.bits[first].item()
    tally.difference(
        Difference(
            kind="value",
            description=f"tensor {key}: {bad_count} elements differ; first at {list(first)}",
            key=key,
            index=list(first),
            first_index=list(first),
            original=short_repr(o),
            replay=short_repr(p),
        )
    )
    return False
