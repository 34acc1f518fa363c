"""Several tasks, an inconclusive comparison: how many runs per task would settle it
(``ledger/stats/comparison.py``, ``compare_tasks``). The answer does not depend on which
method came out ahead: a claim that A beats B where A came out slightly behind needs as many
runs as the same claim with the two swapped."""

from __future__ import annotations

from ledger.stats import compare_tasks

# Two tasks, five seeds each; A is 0.01 behind B on both, well inside the runs' spread.
A = {"x": [0.70, 0.74, 0.69, 0.75, 0.71], "y": [0.50, 0.56, 0.49, 0.55, 0.52]}
B = {"x": [0.71, 0.75, 0.70, 0.76, 0.72], "y": [0.51, 0.57, 0.50, 0.56, 0.53]}


def test_runs_needed_when_the_first_method_came_out_behind() -> None:
    behind = compare_tasks(A, B, n_resamples=2000)
    ahead = compare_tasks(B, A, n_resamples=2000)
    assert behind.verdict == ahead.verdict == "inconclusive"
    assert behind.difference < 0 < ahead.difference
    assert ahead.seeds_needed is not None and ahead.seeds_needed > 5
    assert behind.seeds_needed == ahead.seeds_needed
    assert behind.seeds_needed_basis is not None
    assert "observed difference -0.01, bootstrap se" in behind.seeds_needed_basis
