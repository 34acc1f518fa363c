"""Element rules: dtype defaults, asymmetric closeness, NaN/inf handling, bitwise equality."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.stats import (
    DEFAULT_TOLERANCES,
    EXACT,
    Tolerance,
    bitwise_equal,
    compare_arrays,
    default_tolerance,
    is_close,
    is_exact_dtype,
    normalize_dtype,
)

any_float = st.floats(allow_nan=True, allow_infinity=True)
tolerances = st.floats(min_value=0, max_value=1) | st.just(0.0)


@pytest.mark.parametrize(
    ("dtype", "rtol", "atol"),
    [
        ("fp16", 1e-3, 1e-5),
        ("float16", 1e-3, 1e-5),
        ("bf16", 1.6e-2, 1e-5),
        ("torch.bfloat16", 1.6e-2, 1e-5),
        ("fp32", 1.3e-6, 1e-5),
        (np.float32, 1.3e-6, 1e-5),
        (np.dtype("float32"), 1.3e-6, 1e-5),
        ("fp64", 1e-7, 1e-7),
        (float, 1e-7, 1e-7),
        ("double", 1e-7, 1e-7),
    ],
)
def test_float_defaults_follow_torch_testing(dtype: object, rtol: float, atol: float) -> None:
    assert default_tolerance(dtype) == Tolerance(rtol, atol)


@pytest.mark.parametrize("dtype", ["int64", "uint8", "torch.int32", "bool", int, bool, "count"])
def test_integers_counts_and_booleans_are_exact(dtype: object) -> None:
    assert default_tolerance(dtype) is EXACT
    assert is_exact_dtype(dtype)


def test_plain_float_is_refused_as_ambiguous() -> None:
    with pytest.raises(ValueError, match="ambiguous"):
        normalize_dtype("float")


def test_unknown_dtype_names_the_choices() -> None:
    with pytest.raises(ValueError, match="unknown dtype 'float8'"):
        default_tolerance("float8")


def test_default_table_cannot_be_mutated() -> None:
    with pytest.raises(TypeError):
        DEFAULT_TOLERANCES["float32"] = EXACT  # type: ignore[index]


@pytest.mark.parametrize(("rtol", "atol"), [(-1e-3, 0.0), (0.0, math.nan), (math.inf, 0.0)])
def test_bad_tolerances_are_rejected(rtol: float, atol: float) -> None:
    with pytest.raises(ValueError, match="must be a finite number >= 0"):
        is_close(1.0, 1.0, rtol, atol)
    with pytest.raises(ValueError):
        Tolerance(rtol, atol)


def test_original_is_the_reference() -> None:
    # The allowance scales with |original|: 1 <= 0.095 * 11 but not <= 0.095 * 10.
    assert is_close(11.0, 10.0, rtol=0.095, atol=0.0)
    assert not is_close(10.0, 11.0, rtol=0.095, atol=0.0)


def test_nan_matches_only_nan_and_inf_only_itself() -> None:
    nan, inf = math.nan, math.inf
    assert is_close(nan, nan, 0.0, 0.0)
    assert not is_close(nan, 1.0, 1.0, 1.0)
    assert not is_close(1.0, nan, 1.0, 1.0)
    assert is_close(inf, inf, 0.0, 0.0)
    assert not is_close(inf, -inf, 1.0, 1.0)
    assert not is_close(inf, 1e308, 1.0, 1.0)
    assert not is_close(1e308, inf, 1.0, 1.0)
    assert is_close(-0.0, 0.0, 0.0, 0.0)


@given(any_float, tolerances, tolerances)
def test_every_value_is_close_to_itself(x: float, rtol: float, atol: float) -> None:
    assert is_close(x, x, rtol, atol)


@given(any_float, any_float, tolerances)
def test_without_rtol_closeness_is_symmetric(a: float, b: float, atol: float) -> None:
    assert is_close(a, b, 0.0, atol) == is_close(b, a, 0.0, atol)


@given(any_float, any_float, tolerances, tolerances)
def test_agrees_with_numpy_isclose(orig: float, rep: float, rtol: float, atol: float) -> None:
    with np.errstate(all="ignore"):
        expected = bool(np.isclose(rep, orig, rtol=rtol, atol=atol, equal_nan=True))
    assert is_close(orig, rep, rtol, atol) == expected


@given(any_float, any_float, tolerances, tolerances)
def test_scalar_and_array_rules_agree(orig: float, rep: float, rtol: float, atol: float) -> None:
    arrays = compare_arrays(np.array([orig]), np.array([rep]), rtol=rtol, atol=atol)
    assert arrays.ok == is_close(orig, rep, rtol, atol)


def _nan_with_payload(payload: int) -> float:
    value: float = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000000 | payload))[0]
    return value


def test_bitwise_tells_signed_zeros_and_nan_payloads_apart() -> None:
    assert bitwise_equal(1.5, 1.5)
    assert not bitwise_equal(0.0, -0.0)
    a, b = _nan_with_payload(1), _nan_with_payload(2)
    assert math.isnan(a) and math.isnan(b)
    assert bitwise_equal(a, _nan_with_payload(1))
    assert not bitwise_equal(a, b)


def test_bitwise_compares_dtype_too() -> None:
    assert bitwise_equal(np.float32(0.5), np.float32(0.5))
    assert not bitwise_equal(np.float32(0.5), np.float64(0.5))
    assert not bitwise_equal(np.float16(0.0), np.float16(-0.0))


def test_bitwise_python_float_against_numpy_scalar() -> None:
    # A Python float is fp64: it matches an fp64 numpy scalar with the same bytes, never a
    # narrower dtype of equal value, whichever side it is on.
    assert bitwise_equal(0.5, np.float64(0.5))
    assert bitwise_equal(np.float64(-0.0), -0.0)
    assert not bitwise_equal(0.5, np.float32(0.5))
    assert not bitwise_equal(np.float32(0.5), 0.5)
    assert not bitwise_equal(np.float16(0.0), 0.0)
