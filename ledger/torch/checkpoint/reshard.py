"""Cut a sharded tensor again: the box one loading rank needs, from the pieces of every saved
rank, reading only the chunks that hold bytes of it.

Each saved piece is a box of the whole tensor (``ShardLayout``: offset, and the entry's
shape); replicas hold the same box and are read once. The box is filled piece by piece
through ``io.read_ranges`` (the chunks of all the tensors a load cuts read by one pool of
threads, each hashed whole before any of its bytes is used: a chunk is the unit of
verification). An overlap that is one run of bytes in the piece and in the box (a cut along
the first dimension, as FSDP2 makes) is read straight into the box; any other is read into a
buffer, skipping the chunks that hold none of its runs, and copied out with strides.
Bytes are copied, never computed, so the whole tensor after any number of reshards is
bitwise the saved one; a box the pieces do not fill is an ``IntegrityError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ...errors import IntegrityError
from ...records.base import record_from_json
from ...records.checkpoint import Checkpoint, CheckpointShard, TensorEntry
from ...store import Store
from .codec import torch_dtype
from .io import Range, read_ranges, read_tensors
from .layout import Box, target_box, target_of, targets, volume, wrap

__all__ = ["Pieces", "assemble", "assemble_all", "read_state"]


class Pieces:
    """Every saved rank's entries by key, manifests read once and on first need."""

    def __init__(self, st: Store, rec: Checkpoint, oid: str) -> None:
        self.st, self.rec, self.oid = st, rec, oid
        self._by_key: dict[str, list[tuple[TensorEntry, int]]] | None = None

    def of(self, key: str) -> list[tuple[TensorEntry, int]]:
        if self._by_key is None:
            by_key: dict[str, list[tuple[TensorEntry, int]]] = {}
            for s in self.rec.shards:
                shard = record_from_json(self.st.get_json(s.manifest), CheckpointShard)
                if (shard.step, shard.rank) != (self.rec.step, s.rank):
                    raise IntegrityError(
                        f"checkpoint {self.oid}: shard {s.rank} does not match its record"
                    )
                for e in shard.tensors:
                    if e.layout is not None:
                        by_key.setdefault(e.key, []).append((e, shard.chunk_size))
            self._by_key = by_key
        return self._by_key.get(key, [])


def _strides(shape: tuple[int, ...]) -> list[int]:
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= n
    return out[::-1]


def assemble(st: Store, pieces: list[tuple[TensorEntry, int]], key: str, box: Box) -> torch.Tensor:
    """The ``box`` (offset, shape) of the tensor at ``key``, from the saved ``pieces``."""
    return assemble_all(st, [(pieces, key, box)])[0]


def assemble_all(
    st: Store, jobs: list[tuple[list[tuple[TensorEntry, int]], str, Box]]
) -> list[torch.Tensor]:
    """``assemble`` for several tensors: every overlap planned first, then all their chunks
    read by one pool of threads (``io.read_ranges``). An overlap that is one run of bytes both
    in the saved piece and in the box (a cut along the first dimension, as FSDP2's) is read
    straight into place; any other into a buffer, skipping the chunks that hold none of its
    bytes, then copied into place with strides."""
    outs: list[torch.Tensor] = []
    ranges: list[Range] = []
    copies: list[tuple[torch.Tensor, torch.Tensor, list[int], list[int], tuple[slice, ...]]] = []
    for pieces, key, box in jobs:
        if not pieces:
            raise IntegrityError(f"tensor {key}: no rank of the checkpoint holds a piece of it")
        first = pieces[0][0]
        dtype = torch_dtype(first.dtype)
        offset, shape = box
        out = torch.empty(shape, dtype=dtype)
        outs.append(out)
        itemsize = out.element_size()
        flat = _bytes_of(out)
        out_strides = _strides(shape)
        covered, seen = 0, set()
        for entry, chunk_size in pieces:
            lay = entry.layout
            if lay is None or lay.shape != first.layout.shape or entry.dtype != first.dtype:  # type: ignore[union-attr]
                raise IntegrityError(
                    f"tensor {key}: the saved ranks disagree on its shape or dtype"
                )
            at, size = tuple(lay.offset), tuple(entry.shape)
            lo = [max(a, p) for a, p in zip(offset, at, strict=True)]
            hi = [min(a + n, p + m) for a, n, p, m in zip(offset, shape, at, size, strict=True)]
            if (at, size) in seen or any(low >= high for low, high in zip(lo, hi, strict=True)):
                continue
            seen.add((at, size))
            strides = _strides(size)
            start = sum((low - p) * s for low, p, s in zip(lo, at, strides, strict=True))
            end = 1 + sum((high - 1 - p) * s for high, p, s in zip(hi, at, strides, strict=True))
            extent = [high - low for low, high in zip(lo, hi, strict=True)]
            covered += volume(extent)
            span = (entry, chunk_size, start * itemsize, end * itemsize)
            if _one_run(extent, size) and _one_run(extent, shape):
                # the same bytes in the same order on both sides: no buffer, no second copy
                there = sum(
                    (low - o) * s for low, o, s in zip(lo, offset, out_strides, strict=True)
                )
                n = (end - start) * itemsize
                ranges.append((*span, flat[there * itemsize : there * itemsize + n], None))
                continue
            buf = torch.empty((end - start) * itemsize, dtype=torch.uint8)
            runs = _runs([low - p for low, p in zip(lo, at, strict=True)], extent, size)
            wanted = None if runs is None else _holds(runs, itemsize)
            ranges.append((*span, _bytes_of(buf), wanted))
            index = tuple(slice(lw - a, hg - a) for lw, hg, a in zip(lo, hi, offset, strict=True))
            copies.append((out, buf, extent, strides, index))
        if covered != volume(shape):
            raise IntegrityError(
                f"tensor {key}: the saved pieces fill {covered} of the {volume(shape)} "
                "elements this rank loads",
                hint="the checkpoint's shard manifests are inconsistent; load an older checkpoint",
            )
    read_ranges(st.objects, ranges)
    for out, buf, extent, strides, index in copies:
        out[index].copy_(buf.view(out.dtype).as_strided(extent, strides))
    return outs


def _bytes_of(t: torch.Tensor) -> memoryview:
    """The bytes of the fresh contiguous tensor ``t``, writable, as one flat view."""
    flat: Any = t.reshape(-1).view(torch.uint8).numpy()  # numpy's stubs lack the buffer protocol
    return memoryview(flat).cast("B")


def _one_run(extent: list[int], shape: tuple[int, ...]) -> bool:
    """Whether a box ``extent`` of an array ``shape`` is one run of its C-order bytes: one
    index along every dimension before some dimension, all of every dimension after it."""
    k = 0
    while k < len(extent) and extent[k] == 1:
        k += 1
    return all(e == n for e, n in zip(extent[k + 1 :], shape[k + 1 :], strict=True))


# A box cut across more runs than this is read without asking which chunks hold them.
_MAX_RUNS = 1 << 20


def _runs(lo: list[int], extent: list[int], size: tuple[int, ...]) -> tuple[Any, int] | None:
    """The runs of C-order elements the box (``lo``, ``extent``) covers in a piece of shape
    ``size`` (at least two dimensions: a box of one is one run): (their first elements,
    ascending, as an array; their length), or None when there are more than ``_MAX_RUNS``."""
    import numpy as np

    k = len(size) - 1
    while k > 0 and extent[k] == size[k]:
        k -= 1
    strides = _strides(size)
    count = volume(extent[:k])
    if count > _MAX_RUNS:
        return None
    starts = np.array([lo[k] * strides[k]], dtype=np.int64)
    for i in range(k):  # the outer dimensions, in C order
        along = (np.arange(extent[i], dtype=np.int64) + lo[i]) * strides[i]
        starts = (starts[:, None] + along[None, :]).reshape(-1)
    length = extent[k] * strides[k]
    return starts, length


def _holds(runs: tuple[Any, int], itemsize: int) -> Callable[[int, int], bool]:
    """``wanted`` of ``io.read_ranges`` for these runs: whether bytes ``[a, b)`` of the piece
    hold a byte of any of them."""
    import numpy as np

    starts, length = runs

    def wanted(a: int, b: int) -> bool:
        # the last run starting before b, if any, and whether it reaches past a
        i = int(np.searchsorted(starts, -(-b // itemsize), side="left")) - 1
        return i >= 0 and (int(starts[i]) + length) * itemsize > a

    return wanted


def read_state(
    st: Store,
    rec: Any,
    oid: str,
    shard: CheckpointShard,
    wanted: list[int],
    state: dict[str, Any] | None,
    same: bool,
) -> tuple[list[Any], bool]:
    """This rank's tensors by index (None where not wanted), and whether every one is the
    rank's own saved piece (an exact resume) rather than cut again from other ranks'.

    A DTensor entry is loaded as the box the caller's DTensor at that key needs (the whole
    tensor without one), from this rank's own piece when it is that box, else from every
    rank's pieces (``reshard``), and placed like the caller's DTensor.
    """
    found = targets(state) if any(shard.tensors[i].layout for i in wanted) else ({}, {})
    own: list[int] = []
    placed: dict[int, Any] = {}
    cut: dict[int, tuple[Any, Box]] = {}
    for i in wanted:
        e = shard.tensors[i]
        if e.layout is None:
            own.append(i)
            continue
        target = target_of(found, e.key, e.layout.shape)
        box = target_box(target, e.layout.shape)
        if same and box == (tuple(e.layout.offset), tuple(e.shape)):
            own.append(i)
            placed[i] = target
        else:
            cut[i] = (target, box)
    tensors: list[Any] = [None] * len(shard.tensors)
    loaded = read_tensors(st.objects, [shard.tensors[i] for i in own], shard.chunk_size)
    for i, t in zip(own, loaded, strict=True):
        tensors[i] = wrap(t, placed.get(i))
    pieces = Pieces(st, rec, oid)
    keys = {i: shard.tensors[i].key for i in cut}
    jobs = [(pieces.of(keys[i]), keys[i], box) for i, (_target, box) in cut.items()]
    for (i, (target, _box)), whole in zip(cut.items(), assemble_all(st, jobs), strict=True):
        tensors[i] = wrap(whole, target)
    return tensors, same and not cut
