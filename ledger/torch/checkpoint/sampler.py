"""A sampler whose shuffle order and position survive a restart.

The order of epoch ``e`` is a permutation drawn from its own generator seeded with
``seed + e`` (as ``DistributedSampler`` does), so it never touches the global RNG and can be
recomputed in a new process. The position is what the training loop *consumed*, reported with
``advance(n)``: a DataLoader with workers pulls indices ahead of training, so the sampler
itself cannot know it. ``state_dict()`` goes into the checkpoint like any other stateful object.
"""

from __future__ import annotations

from collections.abc import Iterator, Sized
from typing import Any

import torch
from torch.utils.data import Sampler

from ...errors import UsageError
from .collectives import rank_and_world

__all__ = ["ResumableSampler"]


class ResumableSampler(Sampler[int]):
    """Shuffled (or sequential) indices for this rank, resumable mid-epoch.

    Call ``set_epoch(e)`` before each epoch and ``advance(batch_size)`` after each batch the
    loop has used; after a resume, iteration starts at the first index not yet consumed.
    """

    def __init__(
        self,
        data: Sized | int,
        *,
        shuffle: bool = True,
        seed: int = 0,
        rank: int | None = None,
        world_size: int | None = None,
        drop_last: bool = False,
    ) -> None:
        self.size = data if isinstance(data, int) else len(data)
        r, w = rank_and_world()
        self.rank = r if rank is None else rank
        self.world_size = w if world_size is None else world_size
        if not 0 <= self.rank < self.world_size:
            raise UsageError(f"rank {self.rank} is outside world size {self.world_size}")
        self.shuffle = shuffle
        self.seed = seed
        self.drop_last = drop_last
        self.epoch = 0
        self.consumed = 0  # indices of this epoch the loop has used, on this rank
        if drop_last:
            self.num_samples = self.size // self.world_size
        else:
            self.num_samples = -(-self.size // self.world_size)

    def _order(self) -> list[int]:
        if self.shuffle:
            g = torch.Generator()
            g.manual_seed(self.seed + self.epoch)
            order: list[int] = torch.randperm(self.size, generator=g).tolist()
        else:
            order = list(range(self.size))
        total = self.num_samples * self.world_size
        if total > len(order) and order:  # pad by repeating, like DistributedSampler
            order = (order * (-(-total // len(order))))[:total]
        return order[self.rank : total : self.world_size]

    def _start(self) -> int:
        return self.consumed if self.consumed < self.num_samples else 0

    def __iter__(self) -> Iterator[int]:
        start = self._start()
        self.consumed = start
        return iter(self._order()[start:])

    def __len__(self) -> int:
        return self.num_samples - self._start()

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch's order; a new epoch starts at index 0, the current one stays put."""
        if epoch != self.epoch:
            self.epoch = epoch
            self.consumed = 0

    def advance(self, n: int) -> None:
        """Record that the loop used ``n`` more indices (the batch size, on this rank)."""
        self.consumed += n

    def state_dict(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "consumed": self.consumed,
            "seed": self.seed,
            "shuffle": self.shuffle,
            "size": self.size,
            "rank": self.rank,
            "world_size": self.world_size,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        same = ("seed", "shuffle", "size", "world_size", "rank")
        diff = [k for k in same if state.get(k) != getattr(self, k)]
        if diff:
            raise UsageError(
                "the sampler differs from the checkpointed one in "
                + ", ".join(
                    f"{k} ({state.get(k)!r} saved, {getattr(self, k)!r} now)" for k in diff
                ),
                hint="build the sampler with the same dataset, seed and world size to resume",
            )
        self.epoch = int(state["epoch"])
        self.consumed = int(state["consumed"])
