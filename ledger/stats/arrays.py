"""Compare two numpy arrays (tensors, checkpoints) by dtype, shape and values or raw bytes.

Tensors are compared by content, never by the bytes of the file that holds them: a saved archive
embeds its own file name. Bitwise mode compares each element's raw bytes, so -0.0 differs from 0.0
and NaN payloads count; tolerance mode applies :func:`ledger.stats.is_close` elementwise.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from ._common import JsonMixin
from .tolerance import Tolerance, check_tolerance, default_tolerance

__all__ = ["ArrayComparison", "compare_arrays"]

_NUMERIC_KINDS = "biufc"


@dataclass(frozen=True)
class ArrayComparison(JsonMixin):
    """Outcome of :func:`compare_arrays`; element fields are None when shapes or dtypes differ."""

    ok: bool
    bitwise: bool
    dtype_match: bool
    shape_match: bool
    original_dtype: str
    replay_dtype: str
    original_shape: tuple[int, ...]
    replay_shape: tuple[int, ...]
    rtol: float | None
    atol: float | None
    total: int
    mismatches: int | None
    first_mismatch: tuple[int, ...] | None
    max_abs_diff: float | None
    max_diff_index: tuple[int, ...] | None


def compare_arrays(
    original: npt.ArrayLike,
    replay: npt.ArrayLike,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    dtype: Any = None,
    bitwise: bool = False,
) -> ArrayComparison:
    """Compare ``replay`` against ``original`` element by element.

    Tolerances default to those of ``dtype`` (else the original's dtype); pass
    ``dtype="bfloat16"`` when a bf16 tensor was upcast to float32 for numpy. Indices are tuples in
    C order: ``first_mismatch`` is the first mismatching element, ``max_diff_index`` the element
    with the largest absolute difference (NaN against a number counts as infinite).
    """
    a, b = np.asarray(original), np.asarray(replay)
    for name, arr in (("original", a), ("replay", b)):
        if arr.dtype.kind not in _NUMERIC_KINDS:
            raise ValueError(f"{name} must be a numeric or boolean array, got dtype {arr.dtype}")
    tol = None if bitwise else _tolerance(rtol, atol, dtype if dtype is not None else a.dtype)
    header = ArrayComparison(
        ok=False,
        bitwise=bitwise,
        dtype_match=a.dtype == b.dtype,
        shape_match=a.shape == b.shape,
        original_dtype=str(a.dtype),
        replay_dtype=str(b.dtype),
        original_shape=tuple(a.shape),
        replay_shape=tuple(b.shape),
        rtol=None if tol is None else tol.rtol,
        atol=None if tol is None else tol.atol,
        total=int(a.size),
        mismatches=None,
        first_mismatch=None,
        max_abs_diff=None,
        max_diff_index=None,
    )
    if not (header.dtype_match and header.shape_match):
        return header
    equal = _bitwise_mask(a, b) if tol is None else _close_mask(a, b, tol)
    bad = np.flatnonzero(~equal)
    magnitude = _magnitude(a, b)
    top = int(np.argmax(magnitude)) if magnitude.size else None
    return replace(
        header,
        ok=bad.size == 0,
        mismatches=int(bad.size),
        first_mismatch=_index(int(bad[0]), a.shape) if bad.size else None,
        max_abs_diff=None if top is None else float(magnitude.flat[top]),
        max_diff_index=None if top is None else _index(top, a.shape),
    )


def _tolerance(rtol: float | None, atol: float | None, dtype: Any) -> Tolerance:
    if (rtol is None) != (atol is None):
        raise ValueError("give both rtol and atol, or neither (to use the dtype defaults)")
    if rtol is not None and atol is not None:
        check_tolerance(rtol, atol)
        return Tolerance(rtol, atol)
    return default_tolerance(dtype)


def _bitwise_mask(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    width = a.dtype.itemsize
    ra = np.ascontiguousarray(a).reshape(-1).view(np.uint8).reshape(a.size, width)
    rb = np.ascontiguousarray(b).reshape(-1).view(np.uint8).reshape(b.size, width)
    mask: npt.NDArray[np.bool_] = (ra == rb).all(axis=1).reshape(a.shape)
    return mask


def _close_mask(a: npt.NDArray[Any], b: npt.NDArray[Any], tol: Tolerance) -> npt.NDArray[np.bool_]:
    if a.dtype.kind in "biu":
        # Integers are exact unless the caller gave tolerances; compare them without float
        # rounding in the exact case.
        if tol.exact:
            return np.asarray(a == b)
        a, b = a.astype(np.float64), b.astype(np.float64)
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    x, y = a.astype(wide), b.astype(wide)
    with np.errstate(invalid="ignore", over="ignore"):
        close = np.abs(y - x) <= tol.atol + tol.rtol * np.abs(x)
        nan_x, nan_y = np.isnan(x), np.isnan(y)
        inf_any = (np.isinf(x) | np.isinf(y)) & ~(nan_x | nan_y)
        close = np.where(nan_x | nan_y, nan_x & nan_y, close)
        close = np.where(inf_any, x == y, close)
    return np.asarray(close, dtype=np.bool_)


def _magnitude(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
    if a.dtype.kind in "biu":
        # |a - b| in wrapping uint64 arithmetic is exact where a float64 cast is not (>2**53).
        ua, ub = a.astype(np.int64).view(np.uint64), b.astype(np.int64).view(np.uint64)
        if a.dtype.kind == "u":
            ua, ub = a.astype(np.uint64), b.astype(np.uint64)
        exact = np.where(a >= b, ua - ub, ub - ua)
        return exact.astype(np.float64)
    wide = np.complex128 if a.dtype.kind == "c" else np.float64
    x, y = a.astype(wide), b.astype(wide)
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.abs(y - x).astype(np.float64)
        same = (x == y) | (np.isnan(x) & np.isnan(y))
    d = np.where(same, 0.0, d)
    return np.where(np.isnan(d), np.inf, d)


def _index(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(flat, shape))
