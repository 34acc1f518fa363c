"""ResumableSampler: the order is a function of (seed, epoch); the cursor resumes mid-epoch."""

from __future__ import annotations

import pytest

from ledger.errors import UsageError

pytest.importorskip("torch")

from ledger.torch.checkpoint import ResumableSampler

pytestmark = pytest.mark.torch


def test_resume_mid_epoch_continues_the_same_order() -> None:
    a = ResumableSampler(20, seed=3)
    a.set_epoch(2)
    full = list(a)
    assert sorted(full) == list(range(20)) and full != list(range(20))
    a.advance(8)
    b = ResumableSampler(20, seed=3)
    b.load_state_dict(a.state_dict())
    b.set_epoch(2)  # same epoch: the cursor stays
    assert list(b) == full[8:] and len(b) == 12
    b.advance(12)
    b.set_epoch(3)
    assert len(b) == 20 and list(b) != full


def test_ranks_split_the_epoch_without_overlap() -> None:
    parts = [list(ResumableSampler(10, seed=1, rank=r, world_size=3)) for r in range(3)]
    assert all(len(p) == 4 for p in parts)
    assert set(parts[0]) | set(parts[1]) | set(parts[2]) == set(range(10))


def test_loading_into_a_different_sampler_is_refused() -> None:
    state = ResumableSampler(10, seed=1).state_dict()
    with pytest.raises(UsageError, match=r"seed \(1 saved, 2 now\)"):
        ResumableSampler(10, seed=2).load_state_dict(state)
