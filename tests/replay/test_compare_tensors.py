"""Tensor files compared by dtype, shape and content, never by container bytes or by unpickling."""

from __future__ import annotations

import pathlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ledger.replay.compare import CompareSettings, ToleranceSpec, compare_files

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

BITWISE = CompareSettings(mode="bitwise")
TOLERANCE = CompareSettings(mode="tolerance")


def _state() -> dict[str, Any]:
    g = torch.Generator().manual_seed(0)
    return {
        "encoder.weight": torch.randn(4, 5, generator=g),
        "encoder.bias": torch.zeros(5),
        "head.weight": torch.randn(3, 4, generator=g, dtype=torch.float64),
        "steps": torch.tensor(7),
        "epoch": 3,
    }


def test_torch_save_to_different_file_names_is_bitwise_identical(tmp_path: Path) -> None:
    state = _state()
    torch.save(state, tmp_path / "model.pt")
    (tmp_path / "replay").mkdir()
    torch.save(state, tmp_path / "replay" / "checkpoint-final.pt")
    a, b = tmp_path / "model.pt", tmp_path / "replay" / "checkpoint-final.pt"
    assert a.read_bytes() != b.read_bytes()  # the archive embeds its name: bytes are no test
    result = compare_files(a, b, BITWISE)
    assert result.comparator == "tensors"
    assert result.status == "identical", result
    assert result.total == 20 + 5 + 12 + 1 + 1
    assert result.mismatches == 0


def test_perturbed_tensor_reports_first_key_and_largest_index(tmp_path: Path) -> None:
    state = _state()
    torch.save(state, tmp_path / "a.pt")
    changed = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in state.items()}
    changed["encoder.weight"][1, 2] += 1e-3  # first mismatching element
    changed["encoder.weight"][3, 0] += 0.5  # largest difference
    changed["head.weight"][0, 0] += 1.0  # a later key also differs
    torch.save(changed, tmp_path / "b.pt")
    result = compare_files(tmp_path / "a.pt", tmp_path / "b.pt", TOLERANCE)
    assert result.status == "different"
    diff = result.first_difference
    assert diff is not None
    assert diff.key == "encoder.weight"
    assert diff.index == [3, 0]
    assert diff.first_index == [1, 2]
    orig = float(state["encoder.weight"][3, 0])
    assert diff.original == repr(orig)
    assert diff.abs_diff == pytest.approx(0.5, rel=1e-6)
    assert diff.rel_diff == pytest.approx(0.5 / abs(orig), rel=1e-5)
    assert (diff.rtol, diff.atol) == (1.3e-6, 1e-5)  # fp32 defaults
    assert result.mismatches == 3
    assert any("2 of 5 keys differ: encoder.weight, head.weight" in n for n in result.notes)


def test_tiny_change_is_close_in_tolerance_and_different_bitwise(tmp_path: Path) -> None:
    x = torch.linspace(1, 2, 10)
    torch.save({"w": x}, tmp_path / "a.pt")
    y = x.clone()
    y[4] = torch.nextafter(y[4], torch.tensor(10.0))
    torch.save({"w": y}, tmp_path / "b.pt")
    assert compare_files(tmp_path / "a.pt", tmp_path / "b.pt", TOLERANCE).status == "close"
    bitwise = compare_files(tmp_path / "a.pt", tmp_path / "b.pt", BITWISE)
    assert bitwise.status == "different"
    assert bitwise.first_difference is not None
    assert bitwise.first_difference.index == [4]
    assert bitwise.first_difference.rtol is None


def test_negative_zero_and_nan_in_tensors(tmp_path: Path) -> None:
    torch.save({"w": torch.tensor([0.0, float("nan"), 1.0])}, tmp_path / "a.pt")
    torch.save({"w": torch.tensor([-0.0, float("nan"), 1.0])}, tmp_path / "b.pt")
    torch.save({"w": torch.tensor([0.0, float("nan"), 1.0])}, tmp_path / "c.pt")
    torch.save({"w": torch.tensor([0.0, 2.0, 1.0])}, tmp_path / "d.pt")
    assert compare_files(tmp_path / "a.pt", tmp_path / "b.pt", BITWISE).status == "different"
    assert compare_files(tmp_path / "a.pt", tmp_path / "b.pt", TOLERANCE).status == "close"
    assert compare_files(tmp_path / "a.pt", tmp_path / "c.pt", BITWISE).status == "identical"
    nan_vs_number = compare_files(tmp_path / "a.pt", tmp_path / "d.pt", TOLERANCE)
    assert nan_vs_number.status == "different"
    assert nan_vs_number.first_difference is not None
    assert nan_vs_number.first_difference.index == [1]


def test_bfloat16_uses_its_own_tolerance(tmp_path: Path) -> None:
    x = torch.tensor([1.0, 2.0, 3.0], dtype=torch.bfloat16)
    y = torch.tensor([1.0, 2.0, 3.015625], dtype=torch.bfloat16)  # one bf16 ulp above 3
    torch.save({"w": x}, tmp_path / "a.pt")
    torch.save({"w": y}, tmp_path / "b.pt")
    assert float(y[2]) != float(x[2])
    assert compare_files(tmp_path / "a.pt", tmp_path / "b.pt", TOLERANCE).status == "close"
    result = compare_files(tmp_path / "a.pt", tmp_path / "b.pt", BITWISE)
    assert result.status == "different"
    assert result.first_difference is not None
    assert result.first_difference.index == [2]
    assert result.first_difference.original == "3.0"


def test_dtype_shape_and_key_differences(tmp_path: Path) -> None:
    torch.save({"a": torch.zeros(3), "b": torch.zeros(2, 2), "c": torch.ones(1)}, tmp_path / "o.pt")
    torch.save({"a": torch.zeros(3, dtype=torch.float64)}, tmp_path / "dtype.pt")
    torch.save({"a": torch.zeros(4)}, tmp_path / "shape.pt")
    torch.save({"a": torch.zeros(3), "b": torch.zeros(2, 2)}, tmp_path / "less.pt")
    dtype = compare_files(tmp_path / "o.pt", tmp_path / "dtype.pt", TOLERANCE).first_difference
    assert dtype is not None
    assert (dtype.kind, dtype.key, dtype.original, dtype.replay) == (
        "dtype",
        "a",
        "float32",
        "float64",
    )
    shape = compare_files(tmp_path / "o.pt", tmp_path / "shape.pt", TOLERANCE).first_difference
    assert shape is not None
    assert (shape.kind, shape.original, shape.replay) == ("shape", "[3]", "[4]")
    less = compare_files(tmp_path / "o.pt", tmp_path / "less.pt", TOLERANCE)
    assert less.status == "different"
    assert less.first_difference is not None
    assert less.first_difference.kind == "structure"
    assert less.first_difference.key == "c"
    assert "missing in the replay" in less.first_difference.description


class _Boom:
    """Unpickling this would create a file: proof that nothing was unpickled."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        return (pathlib.Path.touch, (self.marker,))


def test_pickled_objects_in_pt_are_refused_not_loaded(tmp_path: Path) -> None:
    marker = tmp_path / "unpickled"
    torch.save({"w": torch.ones(2), "evil": _Boom(marker)}, tmp_path / "a.pt")
    torch.save({"w": torch.zeros(2), "evil": _Boom(marker)}, tmp_path / "b.pt")
    result = compare_files(tmp_path / "a.pt", tmp_path / "b.pt", TOLERANCE)
    assert result.status == "not-comparable"
    assert result.reason is not None
    assert "cannot compare safely" in result.reason
    assert "weights_only=True" in result.reason
    assert "Unsupported global" in result.reason  # says what was refused
    assert not marker.exists()


def test_garbage_pt_is_not_comparable(tmp_path: Path) -> None:
    (tmp_path / "a.pt").write_bytes(b"not a checkpoint")
    torch.save({"w": torch.ones(2)}, tmp_path / "b.pt")
    result = compare_files(tmp_path / "a.pt", tmp_path / "b.pt", TOLERANCE)
    assert result.status == "not-comparable"
    assert result.reason == "a.pt is not a torch.save file"


def test_override_by_key_and_glob(tmp_path: Path) -> None:
    torch.save({"enc.w": torch.ones(3), "dec.w": torch.ones(3)}, tmp_path / "a.pt")
    torch.save({"enc.w": torch.ones(3) * 1.01, "dec.w": torch.ones(3)}, tmp_path / "b.pt")
    loose = ToleranceSpec(rtol=0.05, atol=0.0)
    by_key = CompareSettings(overrides={"enc.w": loose})
    by_glob = CompareSettings(overrides={"enc.*": loose})
    by_leaf = CompareSettings(overrides={"w": loose})
    for settings in (by_key, by_glob, by_leaf):
        assert compare_files(tmp_path / "a.pt", tmp_path / "b.pt", settings).status == "close"
    assert compare_files(tmp_path / "a.pt", tmp_path / "b.pt").status == "different"


def test_safetensors(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    state = {"w": torch.arange(6.0).reshape(2, 3), "h": torch.ones(4, dtype=torch.bfloat16)}
    save_file(state, str(tmp_path / "a.safetensors"), metadata={"format": "pt"})
    save_file(dict(reversed(state.items())), str(tmp_path / "b.safetensors"), {"format": "pt"})
    same = compare_files(tmp_path / "a.safetensors", tmp_path / "b.safetensors", BITWISE)
    assert same.status == "identical"
    changed = {"w": state["w"].clone(), "h": state["h"]}
    changed["w"][1, 1] = 40.0
    save_file(changed, str(tmp_path / "c.safetensors"), metadata={"format": "np"})
    result = compare_files(tmp_path / "a.safetensors", tmp_path / "c.safetensors", TOLERANCE)
    assert result.status == "different"
    keys = [n for n in result.notes if "keys differ" in n]
    assert keys == ["2 of 3 keys differ: w, __metadata__.format"]
    diff = result.first_difference
    assert diff is not None
    assert (diff.key, diff.index, diff.original, diff.replay) == ("w", [1, 1], "4.0", "40.0")


def test_corrupt_safetensors(tmp_path: Path) -> None:
    (tmp_path / "a.safetensors").write_bytes(b"\x00" * 16)
    (tmp_path / "b.safetensors").write_bytes(b"\x01" * 16)
    result = compare_files(tmp_path / "a.safetensors", tmp_path / "b.safetensors")
    assert result.status == "not-comparable"
    assert result.reason is not None
    assert result.reason.startswith("cannot read a.safetensors")


def test_npy(tmp_path: Path) -> None:
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "same.npy", a.copy())
    b = a.copy()
    b[1, 2, 3] = -5.0
    np.save(tmp_path / "b.npy", b)
    ints = np.arange(5)
    np.save(tmp_path / "i.npy", ints)
    np.save(tmp_path / "j.npy", ints + np.array([0, 0, 1, 0, 0]))
    assert compare_files(tmp_path / "a.npy", tmp_path / "same.npy", BITWISE).status == "identical"
    result = compare_files(tmp_path / "a.npy", tmp_path / "b.npy", TOLERANCE)
    assert result.first_difference is not None
    assert result.first_difference.key == "(root)"
    assert result.first_difference.index == [1, 2, 3]
    assert result.first_difference.abs_diff == 28.0
    loose = CompareSettings(rtol=1.0, atol=1.0)  # integers: exact unless the user says
    assert compare_files(tmp_path / "i.npy", tmp_path / "j.npy", TOLERANCE).status == "different"
    assert compare_files(tmp_path / "i.npy", tmp_path / "j.npy", loose).status == "close"


def test_npy_strings_compare_exactly(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.array(["cat", "dog", "eel"]))
    np.save(tmp_path / "b.npy", np.array(["cat", "dig", "eel"]))
    result = compare_files(tmp_path / "a.npy", tmp_path / "b.npy", TOLERANCE)
    assert result.status == "different"
    assert result.first_difference is not None
    assert (result.first_difference.index, result.first_difference.replay) == ([1], "'dig'")


def test_npz(tmp_path: Path) -> None:
    np.savez(tmp_path / "a.npz", x=np.zeros(3), y=np.ones((2, 2)))
    np.savez_compressed(tmp_path / "same.npz", y=np.ones((2, 2)), x=np.zeros(3))
    y = np.ones((2, 2))
    y[0, 1] = 1 + 1e-12
    np.savez(tmp_path / "close.npz", x=np.zeros(3), y=y)
    assert compare_files(tmp_path / "a.npz", tmp_path / "same.npz", BITWISE).status == "identical"
    close = compare_files(tmp_path / "a.npz", tmp_path / "close.npz", TOLERANCE)
    assert close.status == "close"
    bitwise = compare_files(tmp_path / "a.npz", tmp_path / "close.npz", BITWISE)
    assert bitwise.first_difference is not None
    assert (bitwise.first_difference.key, bitwise.first_difference.index) == ("y", [0, 1])


def test_npz_with_object_array_is_refused(tmp_path: Path) -> None:
    marker = tmp_path / "unpickled"
    np.savez(tmp_path / "a.npz", x=np.zeros(2), meta=np.array([_Boom(marker)], dtype=object))
    np.savez(tmp_path / "b.npz", x=np.ones(2), meta=np.array([_Boom(marker)], dtype=object))
    result = compare_files(tmp_path / "a.npz", tmp_path / "b.npz", TOLERANCE)
    assert result.status == "not-comparable"
    assert result.reason == (
        "cannot compare safely: member 'meta' of a.npz holds pickled Python objects "
        "(dtype object), which numpy.load(allow_pickle=False) refuses; ledger never unpickles"
    )
    assert not marker.exists()


def test_object_npy_is_refused(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    np.save(tmp_path / "b.npy", np.array([{"a": 2}], dtype=object), allow_pickle=True)
    result = compare_files(tmp_path / "a.npy", tmp_path / "b.npy", TOLERANCE)
    assert result.status == "not-comparable"
    assert result.reason is not None
    assert result.reason.startswith("cannot compare safely: a.npy holds pickled Python objects")
