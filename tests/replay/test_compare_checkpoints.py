"""Stored checkpoints compared by tensor content, skeleton and RNG state, not by record id."""

from __future__ import annotations

from typing import Any

import pytest

from ledger.replay.compare import (
    CompareSettings,
    ToleranceSpec,
    compare_checkpoint_steps,
    compare_checkpoints,
)
from ledger.store import Store

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _state(scale: float = 1.0, epoch: int = 3) -> dict[str, Any]:
    g = torch.Generator().manual_seed(0)
    model = {"fc.weight": torch.randn(4, 3, generator=g) * scale, "fc.bias": torch.zeros(4)}
    return {"model": model, "epoch": epoch, "best": 0.5}


def _save(store: Store, run: str, state: dict[str, Any], step: int = 10) -> str:
    from ledger.torch.checkpoint import save_checkpoint

    return save_checkpoint(state, step=step, store=store, run_id=run, rng=False).oid


def test_same_state_from_two_runs_is_identical(store: Store) -> None:
    a, b = _save(store, "orig", _state()), _save(store, "replay", _state())
    assert a != b  # run ids and times differ: the record ids are no test
    result = compare_checkpoints(store, a, b, CompareSettings(mode="bitwise"))
    assert (result.path, result.comparator, result.status) == (
        "checkpoint step 10",
        "checkpoint",
        "identical",
    )
    assert (result.mismatches, result.total) == (0, 12 + 4 + 1)  # tensors + step


def test_changed_weight_is_located(store: Store) -> None:
    changed = _state()
    changed["model"]["fc.weight"][2, 1] += 0.25
    a, b = _save(store, "orig", _state()), _save(store, "replay", changed)
    result = compare_checkpoints(store, a, b)
    assert result.status == "different"
    diff = result.first_difference
    assert diff is not None
    assert (diff.key, diff.index) == ("model/fc.weight", [2, 1])
    assert diff.abs_diff == pytest.approx(0.25)


def test_tolerance_and_overrides(store: Store) -> None:
    a = _save(store, "orig", _state())
    b = _save(store, "replay", _state(scale=1.0 + 1e-7))
    assert compare_checkpoints(store, a, b, CompareSettings()).status == "close"
    assert compare_checkpoints(store, a, b, CompareSettings(mode="bitwise")).status == "different"
    c = _save(store, "far", _state(scale=1.01))
    assert compare_checkpoints(store, a, c).status == "different"
    loose = CompareSettings(overrides={"fc.weight": ToleranceSpec(rtol=0.05, atol=0.0)})
    assert compare_checkpoints(store, a, c, loose).status == "close"


def test_counters_in_the_skeleton(store: Store) -> None:
    a = _save(store, "orig", _state(epoch=3))
    b = _save(store, "replay", _state(epoch=4))
    result = compare_checkpoints(store, a, b)
    assert result.first_difference is not None
    assert (result.first_difference.key, result.first_difference.replay) == ("state.epoch", "4")


def test_rng_states_are_compared(store: Store) -> None:
    from ledger.torch.checkpoint import save_checkpoint

    torch.manual_seed(1)
    a = save_checkpoint(_state(), step=1, store=store, run_id="orig").oid
    torch.rand(3)  # the replay consumed randomness the original did not
    b = save_checkpoint(_state(), step=1, store=store, run_id="replay").oid
    result = compare_checkpoints(store, a, b)
    assert result.status == "different"
    assert result.first_difference is not None
    assert (result.first_difference.key or "").startswith("rng.")


def test_pairing_by_step_and_bad_ids(store: Store) -> None:
    a10, b10 = _save(store, "orig", _state(), 10), _save(store, "replay", _state(), 10)
    a20 = _save(store, "orig", _state(), 20)
    results = compare_checkpoint_steps(store, {10: a10, 20: a20}, {10: b10})
    assert [(r.path, r.status) for r in results] == [
        ("checkpoint step 10", "identical"),
        ("checkpoint step 20", "missing-in-replay"),
    ]
    not_a_checkpoint = store.put_json({"kind": "tree", "entries": [], "total_size": 0})
    bad = compare_checkpoints(store, a10, not_a_checkpoint)
    assert bad.status == "not-comparable"
    assert bad.reason == "expected a checkpoint record, found a tree record"


@pytest.mark.parametrize("extra_in", ["original", "replay"])
def test_a_tensor_on_one_side_only_is_a_structural_difference(store: Store, extra_in: str) -> None:
    from ledger.torch.checkpoint import save_checkpoint

    both = {"w": torch.zeros(2)}
    more = {**both, "extra": torch.ones(3)}
    a = save_checkpoint(more if extra_in == "original" else both, step=1, store=store,
                        run_id="a", rng=False).oid  # fmt: skip
    b = save_checkpoint(both if extra_in == "original" else more, step=1, store=store,
                        run_id="b", rng=False).oid  # fmt: skip
    result = compare_checkpoints(store, a, b)
    assert result.status == "different"
    diff = result.first_difference
    assert diff is not None and (diff.kind, diff.key) == ("structure", "extra")
    other = "replay" if extra_in == "original" else "original"
    assert diff.description == f"extra is in the {extra_in} but missing in the {other}"


def test_checkpoints_saved_by_different_numbers_of_ranks_are_not_compared_tensor_by_tensor(
    store: Store,
) -> None:
    from ledger.records.checkpoint import Checkpoint

    one = _save(store, "orig", _state())
    record = Checkpoint.model_validate(store.get_json(one))
    # The same shard listed for two ranks: a record as a 2-rank save writes it.
    shards = [record.shards[0], record.shards[0].model_copy(update={"rank": 1})]
    two = store.put_json(record.model_copy(update={"world_size": 2, "shards": shards}).to_json())
    result = compare_checkpoints(store, one, two)
    assert (result.status, result.unit, result.mismatches, result.total) == (
        "different",
        "checkpoints",
        1,
        1,
    )
    diff = result.first_difference
    assert diff is not None and (diff.key, diff.original, diff.replay) == ("world_size", "1", "2")
    assert diff.description == "saved by 1 vs 2 ranks"
    # Two ranks against two: compared shard by shard, each under its rank's name.
    same = compare_checkpoints(store, two, two)
    assert same.status == "identical" and same.total == 2 * (12 + 4) + 1
