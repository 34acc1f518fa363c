"""compare_series: alignment by (metric, step), first divergence, structural divergences."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.stats import Tolerance, compare_series

ORIG = [2.3026, 1.9, 1.5, 1.2, 1.0]
REP = [2.3026, 1.9000001, 1.5000004, 1.2001, 1.01]


def _series(values: list[float], metric: str = "loss") -> dict[tuple[str, int], float]:
    return {(metric, step): v for step, v in enumerate(values)}


def test_stats_md_vector_first_divergence_at_index_3() -> None:
    result = compare_series(_series(ORIG), _series(REP), dtypes={"loss": "fp32"})
    assert not result.ok
    first = result.first_divergence
    assert first is not None
    assert (first.metric, first.step) == ("loss", 3)
    assert (first.original, first.replay) == (1.2, 1.2001)
    assert first.abs_diff == pytest.approx(1e-4)
    assert first.rel_diff == pytest.approx(1e-4 / 1.2)
    assert (first.rtol, first.atol) == (1.3e-6, 1e-5)
    assert (result.mismatches, result.compared, result.total_keys) == (2, 5, 5)
    assert result.structural_count == 0


def test_python_floats_get_the_stricter_fp64_defaults() -> None:
    # Step 1 differs by 1e-7 <= 1e-7 + 1e-7 * 1.9; step 2 by 4e-7 > 1e-7 + 1e-7 * 1.5.
    result = compare_series(_series(ORIG), _series(REP))
    assert result.first_divergence is not None
    assert result.first_divergence.step == 2
    assert result.mismatches == 3


def test_global_and_per_metric_overrides() -> None:
    orig = {**_series(ORIG), **_series(ORIG, "acc")}
    rep = {**_series(REP), **_series(ORIG, "acc")}
    loose = compare_series(orig, rep, rtol=0.0, atol=0.02)
    assert loose.ok
    per_metric = compare_series(orig, rep, rtol=0.0, atol=0.02, overrides={"loss": Tolerance(0, 0)})
    assert per_metric.first_divergence is not None
    assert per_metric.first_divergence.step == 1
    by_name = {m.metric: m for m in per_metric.metrics}
    assert by_name["acc"].mismatches == 0 and by_name["loss"].mismatches == 4
    assert (by_name["acc"].rtol, by_name["acc"].atol) == (0.0, 0.02)


def test_rtol_without_atol_is_refused() -> None:
    with pytest.raises(ValueError, match="both rtol and atol"):
        compare_series({}, {}, rtol=1e-3)


def test_integer_metrics_compare_exactly_even_beyond_float_precision() -> None:
    big = 2**60
    result = compare_series({("tokens", 0): big}, {("tokens", 0): big + 1}, dtypes={"tokens": int})
    assert result.mismatches == 1


def test_alignment_is_by_key_not_position() -> None:
    orig = {("loss", 0): 1.0, ("loss", 10): 0.5, ("loss", 20): 0.25}
    rep = {("loss", 20): 0.25, ("loss", 0): 1.0, ("loss", 10): 0.5}
    assert compare_series(orig, rep).ok


def test_structural_divergence_reports_the_first_step() -> None:
    orig = {("loss", 0): 1.0, ("loss", 1): 0.9, ("loss", 2): 0.8, ("acc", 2): 0.5}
    rep = {("loss", 0): 1.0, ("loss", 2): 0.8, ("acc", 2): 0.5, ("lr", 5): 0.1}
    result = compare_series(orig, rep)
    assert not result.ok
    assert result.mismatches == 0 and result.first_divergence is None
    assert result.structural_count == 2
    first = result.first_structural
    assert first is not None
    assert (first.metric, first.step, first.present_in) == ("loss", 1, "original")
    assert result.structural[1].present_in == "replay"
    by_name = {m.metric: m for m in result.metrics}
    assert by_name["loss"].missing_in_replay == 1
    assert by_name["lr"].missing_in_original == 1 and by_name["lr"].compared == 0


def test_first_divergence_is_smallest_step_across_metrics() -> None:
    orig = {("a", 7): 1.0, ("b", 3): 1.0, ("c", 3): 1.0}
    rep = {("a", 7): 2.0, ("b", 3): 1.0, ("c", 3): 2.0}
    first = compare_series(orig, rep).first_divergence
    assert first is not None
    assert (first.metric, first.step) == ("c", 3)


def test_nan_and_inf_in_series() -> None:
    orig = {("m", 0): math.nan, ("m", 1): math.inf, ("m", 2): 1.0}
    rep = {("m", 0): math.nan, ("m", 1): math.inf, ("m", 2): math.nan}
    result = compare_series(orig, rep)
    assert result.mismatches == 1
    assert result.first_divergence is not None and result.first_divergence.step == 2
    metric = result.metrics[0]
    assert metric.max_abs_diff == math.inf and metric.max_abs_diff_step == 2
    text = json.dumps(result.to_json(), allow_nan=False)
    assert '"replay": "nan"' in text


def test_json_truncates_long_structural_lists() -> None:
    orig = {("m", s): 0.0 for s in range(100)}
    out = compare_series(orig, {}).to_json()
    assert out["structural_count"] == 100
    assert isinstance(out["structural"], list) and len(out["structural"]) == 20
    assert out["structural_truncated"] is True


@pytest.mark.parametrize(
    ("series", "message"),
    [
        ({"loss": 1.0}, "keys must be"),
        ({("loss", 1.5): 1.0}, "keys must be"),
        ({("loss", 0): "1.0"}, "must be a real number"),
    ],
)
def test_bad_series_are_rejected(series: dict[object, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        compare_series(series, {})  # type: ignore[arg-type]


keys = st.tuples(st.sampled_from(["loss", "acc", "lr"]), st.integers(0, 50))
values = st.floats(allow_nan=True, allow_infinity=True, width=32)
series_pairs = st.dictionaries(keys, st.tuples(values, values), max_size=40)


@settings(max_examples=50)
@given(series_pairs, st.randoms(use_true_random=False), st.booleans())
def test_result_does_not_depend_on_insertion_order(
    pairs: dict[tuple[str, int], tuple[float, float]], rnd: object, drop: bool
) -> None:
    orig = {k: v[0] for k, v in pairs.items()}
    rep = {k: v[1] for k, v in pairs.items()}
    if drop and rep:
        rep.pop(next(iter(rep)))
    items_o, items_r = list(orig.items()), list(rep.items())
    rnd.shuffle(items_o)  # type: ignore[attr-defined]
    rnd.shuffle(items_r)  # type: ignore[attr-defined]
    shuffled = compare_series(dict(items_o), dict(items_r), default_dtype="fp32")
    assert shuffled.to_json() == compare_series(orig, rep, default_dtype="fp32").to_json()


@settings(max_examples=50)
@given(st.dictionaries(keys, values, max_size=30))
def test_a_series_matches_itself(series: dict[tuple[str, int], float]) -> None:
    result = compare_series(series, dict(series))
    assert result.ok and result.compared == len(series)
