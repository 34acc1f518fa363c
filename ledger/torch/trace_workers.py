"""The RNG states of DataLoader workers, per traced step: ``Trace.loader(loader)``.

    for ids, x, y in tr.loader(loader):   # the same batches, in the same order
        ...

A worker's generators (torch, Python, NumPy) draw the random augmentations of the samples it
loads; a worker seeded from the OS gives other batches in every run. ``tr.loader`` wraps the
loader's ``collate_fn`` (set after construction, as DataLoader allows) in ``WorkerTap``: in
a worker, before the batch is collated, it appends one line, ``{"n": batch count of this
worker, "rng": digests}``, to a file of its own in a directory made for this pass over the
loader, then returns the collate's result untouched. Reading a generator's state does not
advance it, and nothing is drawn: the batches and the program's results are those it gives
without the trace. In the main process, the i-th batch of a pass came from worker
``i % num_workers``, its ``i // num_workers``-th (a map-style dataset with ``in_order``, as
DataLoader assigns batches round-robin); the traced step records that worker's line as
``workers: {"<id>": rng digests}``. The line is written before the batch leaves the worker,
so it is there when the batch arrives.

Not known (nothing recorded): ``num_workers=0`` (the main process's RNG is traced), an
IterableDataset, ``in_order=False`` and persistent workers (their batch counts do not
restart with a pass).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

__all__ = ["LoaderTap", "WorkerTap"]

_COUNTS: dict[str, int] = {}  # directory -> batches collated by this worker process


class WorkerTap:
    """A collate_fn that records the worker's RNG digests, then collates as before."""

    def __init__(self, collate: Any) -> None:
        self.collate = collate
        self.directory: str | None = None

    def __call__(self, samples: Any) -> Any:
        self._record()
        return self.collate(samples)

    def _record(self) -> None:
        import torch

        info = torch.utils.data.get_worker_info()
        if info is None or self.directory is None:
            return
        from .digest import rng_digests

        try:
            n = _COUNTS.get(self.directory, 0)
            _COUNTS[self.directory] = n + 1
            line = json.dumps({"n": n, "rng": rng_digests()}) + "\n"
            with open(os.path.join(self.directory, f"w{info.id}.jsonl"), "a") as f:
                f.write(line)
        except OSError:
            return  # a trace must never stop training; the step then records no worker


class LoaderTap:
    """The main process's side: which worker made the batch just handed out, and its line."""

    def __init__(self, loader: Any) -> None:
        import torch

        self.loader = loader
        self.workers = int(loader.num_workers or 0)
        known = (
            self.workers > 0
            and not isinstance(loader.dataset, torch.utils.data.IterableDataset)
            and not loader.persistent_workers
            and getattr(loader, "in_order", True)
        )
        self.tap: WorkerTap | None = None
        if known:
            current = loader.collate_fn
            self.tap = current if isinstance(current, WorkerTap) else WorkerTap(current)
            loader.collate_fn = self.tap
        self.current: tuple[str, int, int] | None = None  # (directory, worker, its batch)
        self._lines: dict[tuple[str, int], list[dict[str, Any]]] = {}

    def __iter__(self) -> Iterator[Any]:
        if self.tap is None:
            yield from self.loader
            return
        directory = tempfile.mkdtemp(prefix="ledger-workers-")
        self.tap.directory = directory  # the workers of this pass carry it
        try:
            it = iter(self.loader)
            for i, batch in enumerate(it):
                self.current = (directory, i % self.workers, i // self.workers)
                yield batch
        finally:
            self.current = None
            self.tap.directory = None
            self._lines = {k: v for k, v in self._lines.items() if k[0] != directory}
            shutil.rmtree(directory, ignore_errors=True)

    def __len__(self) -> int:
        return len(self.loader)

    def rng(self) -> dict[str, dict[str, str]] | None:
        """``{"<worker id>": digests}`` of the worker that made the current batch."""
        if self.current is None:
            return None
        directory, worker, n = self.current
        key = (directory, worker)
        lines = self._lines.get(key) or []
        if len(lines) <= n:
            path = os.path.join(directory, f"w{worker}.jsonl")
            with contextlib.suppress(OSError, ValueError), open(path) as f:
                lines = [json.loads(t) for t in f if t.endswith("\n")]
            self._lines[key] = lines
        hit = next((x for x in lines if x.get("n") == n), None)
        return {str(worker): hit["rng"]} if hit is not None else None
