"""Stored checkpoint edges: names by rank, written against the survivors of mutation testing."""

from __future__ import annotations

from typing import Any

import pytest

from ledger.replay.compare import CompareSettings, compare_checkpoints
from ledger.store import Store

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch


def _save(store: Store, run: str, state: dict[str, Any]) -> str:
    from ledger.torch.checkpoint import save_checkpoint

    return save_checkpoint(state, step=10, store=store, run_id=run, rng=False).oid


def _two_ranks(store: Store, rank0: str, rank1: str) -> str:
    """A two-rank record made of the shards of two one-rank saves, as a 2-rank save writes it."""
    from ledger.records.checkpoint import Checkpoint

    first = Checkpoint.model_validate(store.get_json(rank0))
    second = Checkpoint.model_validate(store.get_json(rank1))
    shards = [first.shards[0], second.shards[0].model_copy(update={"rank": 1})]
    record = first.model_copy(update={"world_size": 2, "shards": shards})
    return store.put_json(record.to_json())


def test_a_difference_on_one_rank_is_named_by_its_rank(store: Store) -> None:
    state = {"model": {"w": torch.zeros(3)}, "epoch": 1}
    changed = {"model": {"w": torch.tensor([0.0, 0.5, 0.0])}, "epoch": 2}
    same = _save(store, "a", state)
    other = _save(store, "b", changed)
    a = _two_ranks(store, same, same)
    b = _two_ranks(store, same, other)
    result = compare_checkpoints(store, a, b, CompareSettings())
    assert result.status == "different"
    assert result.total == 2 * 3 + 1 + 2  # tensors, step, and the two epochs of rank 1
    diff = result.first_difference
    assert diff is not None
    assert (diff.key, diff.index) == ("rank1/model/w", [1])
    one_rank = compare_checkpoints(store, same, other, CompareSettings())
    assert one_rank.first_difference is not None
    assert one_rank.first_difference.key == "model/w"  # one rank: no prefix


def test_the_tensors_after_one_only_in_the_original_are_still_compared(store: Store) -> None:
    a = _save(store, "a", {"extra": torch.ones(3), "w": torch.zeros(2)})
    b = _save(store, "b", {"w": torch.tensor([0.0, 0.5])})
    result = compare_checkpoints(store, a, b, CompareSettings())
    # "extra", w's two elements (one differs), the step, and in the skeleton state.extra (only
    # in the original) and state.w
    assert (result.status, result.mismatches, result.total) == ("different", 3, 1 + 2 + 3)
    diff = result.first_difference
    assert diff is not None and (diff.kind, diff.key) == ("structure", "extra")


def test_a_replay_saved_by_fewer_ranks_is_different_not_an_error(store: Store) -> None:
    """The other way round from the test of one rank against two in test_compare_checkpoints:
    the original saved by two ranks, the replay by one."""
    one = _save(store, "a", {"w": torch.zeros(2)})
    two = _two_ranks(store, one, one)
    result = compare_checkpoints(store, two, one, CompareSettings())
    assert (result.status, result.unit, result.mismatches, result.total) == (
        "different",
        "checkpoints",
        1,
        1,
    )
    diff = result.first_difference
    assert diff is not None and (diff.key, diff.original, diff.replay) == ("world_size", "2", "1")
    assert diff.description == "saved by 2 vs 1 ranks"
