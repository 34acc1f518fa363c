"""Edges of the two-sample tests (``ledger/stats/twosample.py``): runs without any spread
(every seed gave the same value, as a deterministic program does), a method name mistyped,
and results that cannot be changed."""

from __future__ import annotations

import dataclasses
import math

import pytest

from ledger.stats import mann_whitney, welch_test


@pytest.mark.parametrize(
    ("a", "b", "t", "p_greater", "p_less", "p_two"),
    [
        ([2.0, 2.0, 2.0], [1.0, 1.0, 1.0], math.inf, 0.0, 1.0, 0.0),  # A exactly above
        ([1.0, 1.0, 1.0], [2.0, 2.0, 2.0], -math.inf, 1.0, 0.0, 0.0),  # A exactly below
        ([1.5, 1.5], [1.5, 1.5, 1.5], 0.0, 1.0, 1.0, 1.0),  # the same value
    ],
)
def test_welch_without_any_spread_is_exact(
    a: list[float], b: list[float], t: float, p_greater: float, p_less: float, p_two: float
) -> None:
    w = welch_test(a, b)
    assert (w.t, w.p_greater, w.p_less, w.p_two_sided) == (t, p_greater, p_less, p_two)
    assert w.se == 0.0 and w.ci == (w.difference, w.difference)


def test_a_mistyped_method_is_refused() -> None:
    with pytest.raises(ValueError, match="method must be 'auto', 'exact' or 'asymptotic'"):
        mann_whitney([1.0, 2.0], [3.0, 4.0], method="exakt")  # type: ignore[arg-type]


def test_results_cannot_be_changed() -> None:
    w = welch_test([1.0, 2.0, 3.0], [2.0, 3.0, 4.0])
    m = mann_whitney([1.0, 2.0, 3.0], [2.0, 3.0, 4.0])
    for obj in (w, m):
        with pytest.raises(dataclasses.FrozenInstanceError):
            obj.n_a = 0  # type: ignore[misc]
