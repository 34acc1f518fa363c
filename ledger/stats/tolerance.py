"""Element rules for replay comparison: default tolerances, closeness and bitwise equality.

Closeness is asymmetric, with the ORIGINAL run as reference (as in torch and numpy):
``|replay - original| <= atol + rtol * |original|``. NaN matches only NaN; an infinity matches only
the same infinity. Defaults per dtype follow ``torch.testing.assert_close``; integer, count and
boolean metrics are compared exactly. See docs/explanation/statistics.md.
"""

from __future__ import annotations

import math
import numbers
import re
import struct
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

# numpy only where a numpy value is given (it is imported then): replay compares Python floats.
if TYPE_CHECKING:
    import numpy as np

from ._common import JsonMixin

__all__ = [
    "DEFAULT_TOLERANCES",
    "EXACT",
    "Tolerance",
    "bitwise_equal",
    "default_tolerance",
    "is_close",
    "is_exact_dtype",
    "normalize_dtype",
]


def check_tolerance(rtol: float, atol: float) -> None:
    """Tolerances are finite and non-negative; anything else is a caller bug."""
    for name, value in (("rtol", rtol), ("atol", atol)):
        if not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


@dataclass(frozen=True)
class Tolerance(JsonMixin):
    """A (rtol, atol) pair; both zero means exact comparison."""

    rtol: float
    atol: float

    def __post_init__(self) -> None:
        check_tolerance(self.rtol, self.atol)

    @property
    def exact(self) -> bool:
        return self.rtol == 0 and self.atol == 0


EXACT = Tolerance(0.0, 0.0)

# torch.testing defaults; complex types use the tolerance of their component type.
DEFAULT_TOLERANCES: Mapping[str, Tolerance] = MappingProxyType(
    {
        "float16": Tolerance(1e-3, 1e-5),
        "bfloat16": Tolerance(1.6e-2, 1e-5),
        "float32": Tolerance(1.3e-6, 1e-5),
        "float64": Tolerance(1e-7, 1e-7),
        "complex64": Tolerance(1.3e-6, 1e-5),
        "complex128": Tolerance(1e-7, 1e-7),
    }
)

_FLOAT_ALIASES = {
    "fp16": "float16",
    "half": "float16",
    "bf16": "bfloat16",
    "fp32": "float32",
    "single": "float32",
    "fp64": "float64",
    "double": "float64",
    "cfloat": "complex64",
    "cdouble": "complex128",
}
_EXACT_NAMES = re.compile(r"(u?int\d*|bool|boolean|integer|count|long|short|uint8|byte|char)")


def normalize_dtype(dtype: Any) -> str:
    """Canonical dtype name from a string, numpy dtype, torch dtype or Python type.

    Plain ``"float"`` is refused: it means fp64 in Python and fp32 in torch.
    """
    if dtype is float:
        return "float64"
    if dtype is int:
        return "int64"
    if dtype is bool:
        return "bool"
    np = sys.modules.get("numpy")  # a numpy dtype means numpy is imported already
    if np is not None and (
        isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic))
    ):
        return str(np.dtype(dtype).name)
    name = str(dtype).strip().lower().removeprefix("torch.")
    name = _FLOAT_ALIASES.get(name, name)
    if name in DEFAULT_TOLERANCES or _EXACT_NAMES.fullmatch(name):
        return name
    if name == "float":
        raise ValueError('dtype "float" is ambiguous (fp64 in Python, fp32 in torch); say which')
    known = ", ".join([*DEFAULT_TOLERANCES, "int*", "uint*", "bool"])
    raise ValueError(f"unknown dtype {dtype!r}; expected one of {known}")


def is_exact_dtype(dtype: Any) -> bool:
    """Integers, counts and booleans have no rounding error, so they must match exactly."""
    return normalize_dtype(dtype) not in DEFAULT_TOLERANCES


def default_tolerance(dtype: Any) -> Tolerance:
    """The torch.testing default for ``dtype``; :data:`EXACT` for integer and boolean types."""
    return DEFAULT_TOLERANCES.get(normalize_dtype(dtype), EXACT)


def is_close(original: float, replay: float, rtol: float, atol: float) -> bool:
    """``|replay - original| <= atol + rtol * |original|``; NaN matches NaN, inf only itself."""
    check_tolerance(rtol, atol)
    o, r = float(original), float(replay)
    if math.isnan(o) or math.isnan(r):
        return math.isnan(o) and math.isnan(r)
    if math.isinf(o) or math.isinf(r):
        return o == r
    return abs(r - o) <= atol + rtol * abs(o)


def bitwise_equal(a: float | np.generic, b: float | np.generic) -> bool:
    """Same dtype and same raw bytes: tells -0.0 from 0.0 and one NaN payload from another.

    Python floats are compared as fp64; numpy scalars keep their own dtype.
    """
    if type(a) is float and type(b) is float:  # both fp64: their IEEE bytes, without numpy
        return struct.pack("<d", a) == struct.pack("<d", b)
    import numpy as np

    x, y = np.asarray(a), np.asarray(b)
    return bool(x.dtype == y.dtype and x.tobytes() == y.tobytes())
