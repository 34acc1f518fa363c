"""Pure statistics for replay and audit: tolerances, multi-seed equivalence and claim verdicts.

No I/O and no ledger storage: callers pass numbers and get frozen results whose ``to_json()``
is plain JSON (no NaN). Bad input raises ``ValueError`` naming the argument. The protocol is
described in docs/explanation/statistics.md.
"""

from __future__ import annotations

from .arrays import ArrayComparison, compare_arrays
from .series import (
    MetricComparison,
    SeriesComparison,
    StructuralDivergence,
    ValueDivergence,
    compare_series,
)
from .tolerance import (
    DEFAULT_TOLERANCES,
    EXACT,
    Tolerance,
    bitwise_equal,
    default_tolerance,
    is_close,
    is_exact_dtype,
    normalize_dtype,
)

__all__ = [
    "DEFAULT_TOLERANCES",
    "EXACT",
    "ArrayComparison",
    "MetricComparison",
    "SeriesComparison",
    "StructuralDivergence",
    "Tolerance",
    "ValueDivergence",
    "bitwise_equal",
    "compare_arrays",
    "compare_series",
    "default_tolerance",
    "is_close",
    "is_exact_dtype",
    "normalize_dtype",
]
