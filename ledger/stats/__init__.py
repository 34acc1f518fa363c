"""Pure statistics for replay and audit: tolerances, multi-seed equivalence and claim verdicts.

No I/O and no ledger storage: callers pass numbers and get frozen results whose ``to_json()``
is plain JSON (no NaN). Bad input raises ``ValueError`` naming the argument. The protocol is
described in docs/explanation/statistics.md.
"""

from __future__ import annotations

from .arrays import ArrayComparison, compare_arrays
from .claims import (
    ClaimVerdict,
    ConsistencyCheck,
    ConsistencyReport,
    check_consistency,
    claim_tost,
    claim_verdict,
    combine_verdicts,
    expected_range,
    rounding_halfwidth,
    sigma_readings,
    spread_to_sigma,
)
from .equivalence import (
    ALPHA,
    BootstrapResult,
    SingleRunPlacement,
    TostResult,
    bootstrap_delta,
    default_margin,
    place_single_run,
    welch_tost,
    welch_tost_from_stats,
)
from .multiseed import SeedComparison, compare_seeds
from .power import MAX_SEEDS, seeds_needed, tost_power
from .series import (
    MetricComparison,
    SeriesComparison,
    StructuralDivergence,
    ValueDivergence,
    compare_series,
)
from .summary import (
    SampleSummary,
    iqm,
    mean,
    median,
    probability_of_improvement,
    sem,
    std,
    summarize,
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
    "ALPHA",
    "DEFAULT_TOLERANCES",
    "EXACT",
    "MAX_SEEDS",
    "ArrayComparison",
    "BootstrapResult",
    "ClaimVerdict",
    "ConsistencyCheck",
    "ConsistencyReport",
    "MetricComparison",
    "SampleSummary",
    "SeedComparison",
    "SeriesComparison",
    "SingleRunPlacement",
    "StructuralDivergence",
    "Tolerance",
    "TostResult",
    "ValueDivergence",
    "bitwise_equal",
    "bootstrap_delta",
    "check_consistency",
    "claim_tost",
    "claim_verdict",
    "combine_verdicts",
    "compare_arrays",
    "compare_seeds",
    "compare_series",
    "default_margin",
    "default_tolerance",
    "expected_range",
    "iqm",
    "is_close",
    "is_exact_dtype",
    "mean",
    "median",
    "normalize_dtype",
    "place_single_run",
    "probability_of_improvement",
    "rounding_halfwidth",
    "seeds_needed",
    "sem",
    "sigma_readings",
    "spread_to_sigma",
    "std",
    "summarize",
    "tost_power",
    "welch_tost",
    "welch_tost_from_stats",
]
