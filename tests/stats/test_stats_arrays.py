"""compare_arrays: dtype and shape checks, mismatch counts and indices, bitwise mode."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ledger.stats import compare_arrays, default_tolerance


def test_stats_md_vector_as_fp32_arrays() -> None:
    orig = np.array([2.3026, 1.9, 1.5, 1.2, 1.0], dtype=np.float32)
    rep = np.array([2.3026, 1.9000001, 1.5000004, 1.2001, 1.01], dtype=np.float32)
    result = compare_arrays(orig, rep)
    assert (result.rtol, result.atol) == (1.3e-6, 1e-5)
    assert not result.ok
    assert result.first_mismatch == (3,)
    assert result.mismatches == 2 and result.total == 5
    assert result.max_diff_index == (4,)


def test_indices_are_tuples_in_c_order() -> None:
    a = np.zeros((2, 3, 4))
    b = a.copy()
    b[0, 2, 1] = 1e-3
    b[1, 0, 3] = 5.0
    result = compare_arrays(a, b)
    assert result.first_mismatch == (0, 2, 1)
    assert result.max_diff_index == (1, 0, 3)
    assert result.max_abs_diff == 5.0
    json.dumps(result.to_json(), allow_nan=False)


def test_shape_or_dtype_mismatch_skips_element_comparison() -> None:
    shape = compare_arrays(np.zeros(3), np.zeros(4))
    assert not shape.ok and not shape.shape_match and shape.mismatches is None
    dtype = compare_arrays(np.zeros(3, np.float32), np.zeros(3, np.float64))
    assert not dtype.ok and not dtype.dtype_match and dtype.first_mismatch is None


def test_bitwise_counts_signed_zero_and_nan_payload() -> None:
    a = np.array([0.0, np.nan, 1.0])
    b = a.copy()
    b[0] = -0.0
    raw = b.view(np.uint64)
    raw[1] = raw[1] | np.uint64(1)  # another NaN payload
    assert np.isnan(b[1])
    assert compare_arrays(a, b).ok
    bitwise = compare_arrays(a, b, bitwise=True)
    assert not bitwise.ok and bitwise.mismatches == 2 and bitwise.first_mismatch == (0,)
    assert bitwise.rtol is None and bitwise.max_abs_diff == 0.0


def test_nan_against_number_is_the_largest_difference() -> None:
    result = compare_arrays(np.array([1.0, 2.0, 3.0]), np.array([1.5, np.nan, 3.0]))
    assert result.mismatches == 2
    assert result.max_diff_index == (1,)
    assert result.to_json()["max_abs_diff"] == "inf"


def test_bf16_upcast_uses_bf16_defaults_when_told() -> None:
    a = np.array([1.0, 2.0], dtype=np.float32)
    b = a * (1 + 1e-2)
    assert not compare_arrays(a, b).ok
    told = compare_arrays(a, b, dtype="bfloat16")
    assert told.ok and told.rtol == default_tolerance("bf16").rtol


def test_integer_arrays_are_exact_and_differences_exact() -> None:
    a = np.array([1, 2**62 + 1, -(2**63)], dtype=np.int64)
    b = np.array([1, 2**62, 2**63 - 1], dtype=np.int64)
    result = compare_arrays(a, b)
    assert result.mismatches == 2 and result.first_mismatch == (1,)
    assert result.max_diff_index == (2,) and result.max_abs_diff == float(2**64 - 1)
    assert compare_arrays(np.array([True, False]), np.array([True, False])).ok


def test_empty_and_zero_dim_arrays() -> None:
    empty = compare_arrays(np.zeros((0, 3)), np.zeros((0, 3)))
    assert empty.ok and empty.max_diff_index is None
    scalar = compare_arrays(np.float32(1.0), np.float32(2.0))
    assert not scalar.ok and scalar.first_mismatch == ()


def test_non_numeric_arrays_are_rejected() -> None:
    with pytest.raises(ValueError, match="numeric or boolean"):
        compare_arrays(np.array(["a"]), np.array(["a"]))
    with pytest.raises(ValueError, match="both rtol and atol"):
        compare_arrays(np.zeros(1), np.zeros(1), atol=1.0)
