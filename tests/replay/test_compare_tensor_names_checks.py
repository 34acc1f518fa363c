"""Which names the tensor comparator takes (told without importing numpy)."""

from __future__ import annotations

from ledger.replay.compare.tensor_names import is_tensor_file


def test_tensor_names_whatever_their_case() -> None:
    assert is_tensor_file("w/Model.PT")
    assert is_tensor_file("x.SafeTensors")
    assert is_tensor_file("a.npz")
    assert not is_tensor_file("a.pt.json")
    assert is_tensor_file("a.ckpt") is True
    assert is_tensor_file("notes.txt") is False
