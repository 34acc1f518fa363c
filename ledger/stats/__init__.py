"""Pure statistics for replay and audit: tolerances, multi-seed equivalence and claim verdicts.

No I/O and no ledger storage: callers pass numbers and get frozen results whose ``to_json()``
is plain JSON (no NaN). Bad input raises ``ValueError`` naming the argument. The protocol is
described in docs/explanation/statistics.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .arrays import ArrayComparison, compare_arrays
    from .bounds import BoundVerdict, bound_seeds_needed, bound_verdict
    from .claims import (
        ClaimVerdict,
        ConsistencyCheck,
        ConsistencyReport,
        SingleRunVerdict,
        check_consistency,
        claim_tost,
        claim_verdict,
        combine_verdicts,
        expected_range,
        rounding_halfwidth,
        sigma_readings,
        single_run_verdict,
        spread_to_sigma,
    )
    from .comparison import (
        MIN_RUNS,
        ComparisonResult,
        Interval,
        TaskComparison,
        compare_methods,
        compare_tasks,
        trimmed_iqm,
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
    from .rank import ExactRank, exact_rank, replays_for_rank_test
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
    from .twosample import (
        MannWhitneyResult,
        WelchResult,
        mann_whitney,
        seeds_for_difference,
        t_test_power,
        welch_test,
    )

# Names load on first use (PEP 562): replay's bitwise and tolerance checks need numpy only, and
# importing the claim and equivalence tests would pull in scipy (seconds) for every replay.
_WHERE = {
    "ArrayComparison": "arrays",
    "compare_arrays": "arrays",
    "BoundVerdict": "bounds",
    "bound_seeds_needed": "bounds",
    "bound_verdict": "bounds",
    "ClaimVerdict": "claims",
    "ConsistencyCheck": "claims",
    "ConsistencyReport": "claims",
    "check_consistency": "claims",
    "claim_tost": "claims",
    "claim_verdict": "claims",
    "combine_verdicts": "claims",
    "expected_range": "claims",
    "rounding_halfwidth": "claims",
    "sigma_readings": "claims",
    "SingleRunVerdict": "claims",
    "single_run_verdict": "claims",
    "spread_to_sigma": "claims",
    "MIN_RUNS": "comparison",
    "ComparisonResult": "comparison",
    "Interval": "comparison",
    "TaskComparison": "comparison",
    "compare_methods": "comparison",
    "compare_tasks": "comparison",
    "trimmed_iqm": "comparison",
    "MannWhitneyResult": "twosample",
    "WelchResult": "twosample",
    "mann_whitney": "twosample",
    "seeds_for_difference": "twosample",
    "t_test_power": "twosample",
    "welch_test": "twosample",
    "ALPHA": "equivalence",
    "BootstrapResult": "equivalence",
    "SingleRunPlacement": "equivalence",
    "TostResult": "equivalence",
    "bootstrap_delta": "equivalence",
    "default_margin": "equivalence",
    "place_single_run": "equivalence",
    "welch_tost": "equivalence",
    "welch_tost_from_stats": "equivalence",
    "SeedComparison": "multiseed",
    "ExactRank": "rank",
    "exact_rank": "rank",
    "replays_for_rank_test": "rank",
    "compare_seeds": "multiseed",
    "MAX_SEEDS": "power",
    "seeds_needed": "power",
    "tost_power": "power",
    "MetricComparison": "series",
    "SeriesComparison": "series",
    "StructuralDivergence": "series",
    "ValueDivergence": "series",
    "compare_series": "series",
    "SampleSummary": "summary",
    "iqm": "summary",
    "mean": "summary",
    "median": "summary",
    "probability_of_improvement": "summary",
    "sem": "summary",
    "std": "summary",
    "summarize": "summary",
    "DEFAULT_TOLERANCES": "tolerance",
    "EXACT": "tolerance",
    "Tolerance": "tolerance",
    "bitwise_equal": "tolerance",
    "default_tolerance": "tolerance",
    "is_close": "tolerance",
    "is_exact_dtype": "tolerance",
    "normalize_dtype": "tolerance",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "ALPHA",
    "DEFAULT_TOLERANCES",
    "EXACT",
    "MAX_SEEDS",
    "MIN_RUNS",
    "ArrayComparison",
    "BootstrapResult",
    "BoundVerdict",
    "ClaimVerdict",
    "ComparisonResult",
    "ConsistencyCheck",
    "ConsistencyReport",
    "ExactRank",
    "Interval",
    "MannWhitneyResult",
    "MetricComparison",
    "SampleSummary",
    "SeedComparison",
    "SeriesComparison",
    "SingleRunPlacement",
    "SingleRunVerdict",
    "StructuralDivergence",
    "TaskComparison",
    "Tolerance",
    "TostResult",
    "ValueDivergence",
    "WelchResult",
    "bitwise_equal",
    "bootstrap_delta",
    "bound_seeds_needed",
    "bound_verdict",
    "check_consistency",
    "claim_tost",
    "claim_verdict",
    "combine_verdicts",
    "compare_arrays",
    "compare_methods",
    "compare_seeds",
    "compare_series",
    "compare_tasks",
    "default_margin",
    "default_tolerance",
    "exact_rank",
    "expected_range",
    "iqm",
    "is_close",
    "is_exact_dtype",
    "mann_whitney",
    "mean",
    "median",
    "normalize_dtype",
    "place_single_run",
    "probability_of_improvement",
    "replays_for_rank_test",
    "rounding_halfwidth",
    "seeds_for_difference",
    "seeds_needed",
    "sem",
    "sigma_readings",
    "single_run_verdict",
    "spread_to_sigma",
    "std",
    "summarize",
    "t_test_power",
    "tost_power",
    "trimmed_iqm",
    "welch_test",
    "welch_tost",
    "welch_tost_from_stats",
]
