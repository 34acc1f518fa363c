"""Tolerance values themselves: the complex defaults, what counts as exact, and a shared default
that nobody can change in place (mutation testing found these unchecked, issue #18)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ledger.stats import (
    DEFAULT_TOLERANCES,
    EXACT,
    Tolerance,
    default_tolerance,
    is_exact_dtype,
    normalize_dtype,
)


@pytest.mark.parametrize(
    ("dtype", "rtol", "atol"),
    [
        # torch.testing: a complex type uses the tolerance of its component type.
        ("complex64", 1.3e-6, 1e-5),
        ("cfloat", 1.3e-6, 1e-5),
        (np.complex64, 1.3e-6, 1e-5),
        ("complex128", 1e-7, 1e-7),
        ("cdouble", 1e-7, 1e-7),
        ("torch.complex128", 1e-7, 1e-7),
    ],
)
def test_complex_defaults_are_those_of_their_component(
    dtype: object, rtol: float, atol: float
) -> None:
    assert default_tolerance(dtype) == Tolerance(rtol, atol)
    assert not is_exact_dtype(dtype)


def test_exact_means_both_tolerances_zero() -> None:
    assert (EXACT.rtol, EXACT.atol) == (0.0, 0.0)
    assert EXACT.exact is True
    assert Tolerance(0, 0).exact is True
    assert Tolerance(0.0, 1e-12).exact is False
    assert Tolerance(1e-12, 0.0).exact is False
    assert Tolerance(1.0, 1.0).exact is False
    assert not any(t.exact for t in DEFAULT_TOLERANCES.values())


def test_a_shared_default_cannot_be_changed_in_place() -> None:
    # default_tolerance hands out the table's own objects: were they mutable, one caller could
    # loosen every later comparison of that dtype.
    shared = default_tolerance("float32")
    with pytest.raises(dataclasses.FrozenInstanceError):
        shared.rtol = 1.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        EXACT.atol = 1.0  # type: ignore[misc]
    assert default_tolerance("float32") == Tolerance(1.3e-6, 1e-5)
    # Frozen values hash: usable as keys of per-tolerance caches and sets.
    assert {Tolerance(1e-7, 1e-7), default_tolerance("float64")} == {Tolerance(1e-7, 1e-7)}


def test_python_types_have_canonical_names() -> None:
    assert normalize_dtype(float) == "float64"
    assert normalize_dtype(int) == "int64"
    assert normalize_dtype(bool) == "bool"
    assert normalize_dtype(np.int8) == "int8" and normalize_dtype(" Torch.Float16 ") == "float16"
