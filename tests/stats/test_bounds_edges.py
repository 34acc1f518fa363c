"""Edges of a "below / above a bound" claim over several runs (``ledger/stats/bounds.py``):
a mean exactly on the bound, a verdict that cannot be changed once made, and the search for
the seeds needed, which must end in a few dozen steps (this file runs first for the module, so
a search that never ends fails here before a slower test hangs in it)."""

from __future__ import annotations

import dataclasses

import pytest

from ledger.stats import bounds
from ledger.stats.bounds import bound_seeds_needed, bound_verdict


@pytest.mark.parametrize("side", ["below", "above"])
def test_a_mean_exactly_on_the_bound_is_inconclusive_with_no_runs_to_suggest(side: str) -> None:
    """Two runs, 0.5 and 1.5, against "error below 1.0": the mean is the bound itself. More
    runs cannot be expected to show it on either side, so no number is suggested (and the
    verdict is still given, not an error)."""
    v = bound_verdict([0.5, 1.5], bound=1.0, side=side)  # type: ignore[arg-type]
    assert v.verdict == "inconclusive" and v.mean == 1.0
    assert v.seeds_needed is None


def test_a_bound_verdict_cannot_be_changed() -> None:
    v = bound_verdict([0.5, 0.6, 0.7], bound=1.0, side="below")
    assert v.verdict == "supported"
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.verdict = "not_supported"  # type: ignore[misc]


def test_the_seeds_needed_take_a_few_dozen_power_evaluations(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Up to MAX_SEEDS (100,000) runs: the search doubles n, then bisects, so each answer costs
    about 2 * log2(100,000) = 34 evaluations of the power, never one per n (or a search that
    never ends: an evaluation past the 60th fails here)."""
    calls = []
    sf = bounds.stats.nct.sf

    def counted(*args: float) -> float:
        calls.append(args)
        if len(calls) > 60:
            raise RuntimeError("bound_seeds_needed evaluated the power more than 60 times")
        return float(sf(*args))

    monkeypatch.setattr(bounds.stats.nct, "sf", counted)
    for gap, expected in ((1.0, 8), (0.5, 27), (0.01, 61827), (1e-3, None)):
        calls.clear()
        assert bound_seeds_needed(gap, 1.0) == expected
        assert 1 <= len(calls) <= 40, (gap, len(calls))
