"""One call for a multi-seed replay: summaries, the equivalence decision and its cross-checks.

With two or more original seeds the decision is the Welch TOST, cross-checked by a seeded
percentile bootstrap. With a single original run there is no original spread to test against,
so the result instead says where that run falls among the replayed seeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy.typing as npt

from ._common import JsonMixin, as_sample
from .equivalence import (
    BootstrapResult,
    SingleRunPlacement,
    TostResult,
    bootstrap_delta,
    place_single_run,
    welch_tost,
)
from .summary import SampleSummary, probability_of_improvement, summarize

__all__ = ["SeedComparison", "compare_seeds"]

Sample = Sequence[float] | npt.ArrayLike


@dataclass(frozen=True)
class SeedComparison(JsonMixin):
    """Exactly one of ``tost`` (with ``bootstrap``) and ``single_run`` is set."""

    original: SampleSummary
    replay: SampleSummary
    probability_replay_higher: float
    tost: TostResult | None
    bootstrap: BootstrapResult | None
    single_run: SingleRunPlacement | None


def compare_seeds(
    original: Sample,
    replay: Sample,
    *,
    margin: float | None = None,
    decimals: int | None = None,
    power: float = 0.8,
    seed: int | None = None,
    n_resamples: int = 10_000,
    level: float = 0.95,
) -> SeedComparison:
    """Compare the replayed seeds' main metric with the original seeds'.

    ``margin``/``decimals``/``power`` go to :func:`welch_tost`, ``seed``/``n_resamples`` to
    :func:`bootstrap_delta` (record the returned seed), ``level`` to :func:`place_single_run`.
    """
    a = as_sample(original, "original")
    b = as_sample(replay, "replay", min_n=2)
    single = a.size == 1
    return SeedComparison(
        original=summarize(a),
        replay=summarize(b),
        probability_replay_higher=probability_of_improvement(b, a),
        tost=None if single else welch_tost(a, b, margin=margin, decimals=decimals, power=power),
        bootstrap=None if single else bootstrap_delta(a, b, seed=seed, n_resamples=n_resamples),
        single_run=place_single_run(float(a[0]), b, level=level) if single else None,
    )
