"""Edges of a "below / above a bound" claim over several runs (``ledger/stats/bounds.py``):
a mean exactly on the bound, and a verdict that cannot be changed once made."""

from __future__ import annotations

import dataclasses

import pytest

from ledger.stats.bounds import bound_verdict


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
