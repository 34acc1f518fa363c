"""Exact TOST power and seeds needed: STATS.md table, simulation and approximation checks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from ledger.stats import seeds_needed, tost_power


@pytest.mark.parametrize(("ratio", "n"), [(0.5, 70), (1.0, 18), (1.5, 9), (2.0, 6), (3.0, 3)])
def test_stats_md_table_of_seeds_per_group(ratio: float, n: int) -> None:
    assert seeds_needed(ratio, 1.0) == n
    assert tost_power(ratio, 1.0, n) >= 0.8
    assert tost_power(ratio, 1.0, n - 1) < 0.8 or n == 2


def test_scale_invariance() -> None:
    assert seeds_needed(0.3, 0.3) == seeds_needed(1.0, 1.0)


def test_power_matches_simulation() -> None:
    rng = np.random.default_rng(2024)
    n, ratio, sims = 9, 1.5, 40_000
    x = rng.standard_normal((sims, n))
    y = rng.standard_normal((sims, n))
    d = y.mean(axis=1) - x.mean(axis=1)
    se = np.sqrt((x.var(axis=1, ddof=1) + y.var(axis=1, ddof=1)) / n)
    t = stats.t.ppf(0.95, 2 * n - 2)
    simulated = np.mean((d - t * se > -ratio) & (d + t * se < ratio))
    assert tost_power(ratio, 1.0, n) == pytest.approx(simulated, abs=0.01)


def test_power_approaches_noncentral_t_bound_for_large_n() -> None:
    # For large n the two one-sided rejections almost never fail together, so the exact power
    # equals the usual two-noncentral-t expression.
    n, ratio = 200, 0.4
    df, se = 2 * n - 2, np.sqrt(2 / n)
    t = stats.t.ppf(0.95, df)
    approx = stats.nct.cdf(-t, df, -ratio / se) - stats.nct.cdf(t, df, ratio / se)
    assert tost_power(ratio, 1.0, n) == pytest.approx(approx, abs=1e-6)


def test_one_sample_design_needs_fewer_seeds() -> None:
    one = seeds_needed(1.0, 1.0, design="one-sample")
    assert one is not None and one < 18
    assert tost_power(1.0, 1.0, one, design="one-sample") >= 0.8


def test_hopeless_margins_return_none() -> None:
    assert seeds_needed(0.001, 1.0) is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"margin": -1.0, "sigma": 1.0, "n": 5}, "margin must be a positive"),
        ({"margin": 1.0, "sigma": 0.0, "n": 5}, "sigma must be a positive"),
        ({"margin": 1.0, "sigma": 1.0, "n": 1}, "degree of freedom"),
        ({"margin": 1.0, "sigma": 1.0, "n": 5, "alpha": 1.5}, "alpha must be strictly"),
        ({"margin": 1.0, "sigma": 1.0, "n": 5, "design": "paired"}, "design must be"),
    ],
)
def test_bad_input(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tost_power(**kwargs)  # type: ignore[arg-type]
