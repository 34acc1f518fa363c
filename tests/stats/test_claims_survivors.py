"""Claim audits: tests written for the mutation run's survivors of ``ledger/stats/claims.py``
(kept apart from ``test_claims_edges.py`` so that adding one reruns only the mutants it covers)."""

from __future__ import annotations

import pytest

from ledger.stats import check_consistency, expected_range, rounding_halfwidth


@pytest.mark.parametrize("n", [1, 0, True, 2.5])
def test_the_expected_range_needs_two_draws(n: object) -> None:
    """d2(n) of one draw is 0: reading a range through it would divide by zero."""
    with pytest.raises(ValueError, match="n must be an integer >= 2"):
        expected_range(n)  # type: ignore[arg-type]


def test_the_rounding_boundary_is_included_with_its_slack() -> None:
    """A value rounds to the claim within half a unit plus 1e-9 (relative) of slack,
    boundary included: a recorded mean exactly that far from the claim still rounds to it."""
    edge = rounding_halfwidth(0) + 1e-9  # claim 0, 0 decimals: half a unit, slack 1e-9 * 1
    for recorded in (edge, -edge):
        c = check_consistency(
            [recorded, recorded], value=0.0, decimals=0, spread=0.0, spread_type="std", n_seeds=2
        )
        assert {k.name: k.passed for k in c.checks}["value_rounds"], recorded
    beyond = check_consistency(
        [edge * 1.000001] * 2, value=0.0, decimals=0, spread=0.0, spread_type="std", n_seeds=2
    )
    assert not {k.name: k.passed for k in beyond.checks}["value_rounds"]
