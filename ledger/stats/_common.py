"""Input checks and JSON conversion shared by the stats modules.

Bad input raises ``ValueError`` with a message naming the argument, so the CLI layer can turn it
into a usage error without guessing what went wrong.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

# numpy is imported where a sample is built, not here: a bitwise replay compares metric
# series through this package and must not pay numpy's import (~0.1-0.5 s) for it.
if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float64]
else:
    FloatArray = Any  # a name for annotations elsewhere (ledger/stats/summary.py)

JsonValue = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]


def as_sample(values: Sequence[float] | npt.ArrayLike, name: str, *, min_n: int = 1) -> FloatArray:
    """A 1-D float64 copy of ``values``; rejects empty, too short and non-finite samples."""
    import numpy as np

    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of numbers, got shape {arr.shape}")
    if arr.size < min_n:
        need = "at least one value" if min_n == 1 else f"at least {min_n} values"
        raise ValueError(f"{name} needs {need}, got {arr.size}")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"{name} has a non-finite value {float(arr[i])!r} at index {i}")
    return arr


def binary_exponent(*samples: FloatArray) -> int:
    """``e`` such that ``ldexp(x, -e)`` puts the largest magnitude of ``samples`` in [0.5, 1).

    Means, variances and bootstrap means of metric values near 1e300 overflow, and variances of
    values near 1e-300 underflow to 0 (a spread read as none at all). Scaling by a power of two
    is exact, so the statistics are computed on scaled values and scaled back.
    """
    import numpy as np

    top = max((float(np.max(np.abs(x))) for x in samples if x.size), default=0.0)
    return math.frexp(top)[1] if top > 0 and math.isfinite(top) else 0


def unscale(value: float, e: int) -> float:
    """``ldexp(value, e)``; a result past the float range is +-inf, not an OverflowError."""
    import numpy as np

    with np.errstate(over="ignore", under="ignore"):
        return float(np.ldexp(np.float64(value), e))


def check_margin(margin: float, name: str = "margin") -> float:
    """Margins must be finite and positive: a zero margin can never show equivalence."""
    m = float(margin)
    if not math.isfinite(m) or m <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {margin!r}")
    return m


def check_probability(p: float, name: str) -> float:
    """Levels, alphas and powers live strictly between 0 and 1."""
    v = float(p)
    if not 0 < v < 1:
        raise ValueError(f"{name} must be strictly between 0 and 1, got {p!r}")
    return v


def json_float(x: float | None) -> float | str | None:
    """JSON has no NaN or infinity: spell them as strings so nothing is silently lost."""
    if x is None:
        return None
    v = float(x)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def to_jsonable(value: Any) -> JsonValue:
    """Plain JSON types for a (nested) frozen dataclass result."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if value is None or isinstance(value, bool | str):
        return value
    np = sys.modules.get("numpy")  # a numpy scalar means numpy is imported already
    if np is not None and isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, int) or (np is not None and isinstance(value, np.integer)):
        return int(value)
    if isinstance(value, float) or (np is not None and isinstance(value, np.floating)):
        return json_float(float(value))
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    raise TypeError(f"cannot convert {type(value).__name__} to JSON")


class JsonMixin:
    """Gives a dataclass result a ``to_json()`` returning plain JSON types (no NaN)."""

    def to_json(self) -> dict[str, JsonValue]:
        out = to_jsonable(self)
        if not isinstance(out, dict):
            raise TypeError(f"{type(self).__name__} is not a dataclass: no JSON object")
        return out
