"""One recorded root seed per run; independent child seeds per purpose, rank and worker.

Children come from ``numpy.random.SeedSequence(entropy=root, spawn_key=(stream, rank[, worker,
base]))`` where ``stream`` is the CRC-32 of the purpose's UTF-8 name (stable across processes and
Python versions, unlike ``hash()``). Every derived seed is a 63-bit int, so anything can be
re-seeded from the recorded number alone.

Where the root comes from, first match wins: ``LEDGER_SEED_ROOT`` (replay forces it), the
``root`` argument, and otherwise a fresh draw. With several ranks every rank must get the same
root: it is derived from ``LEDGER_RUN_ID`` under ``ledger record``, else broadcast from rank 0
when ``torch.distributed`` is initialised (a collective: call ``seed()`` on every rank), else
each rank draws its own and a warning says the run cannot be replayed with one root.
"""

from __future__ import annotations

import os
import random
import sys
import threading
import zlib
from typing import Any

from ..errors import UsageError
from ._env import RankInfo, rank_info
from ._files import write_json_atomic
from ._warn import warn_once

__all__ = ["Seeds", "current_seeds", "seed", "stream_id", "worker_seed"]

_MASK63 = (1 << 63) - 1


def stream_id(name: str) -> int:
    """The stable number of a purpose name: CRC-32 of its UTF-8 bytes."""
    return zlib.crc32(name.encode("utf-8"))


def _generate(root: int, key: tuple[int, ...]) -> int:
    import numpy as np

    words = np.random.SeedSequence(entropy=root, spawn_key=key).generate_state(2, np.uint32)
    return (int(words[0]) | int(words[1]) << 32) & _MASK63


def worker_seed(root: int, rank: int, purpose: str, worker: int, base_seed: int) -> int:
    """A DataLoader worker's seed: distinct per rank, worker and iterator (``base_seed`` is what
    torch drew from the loader's generator for this epoch, so epochs differ too)."""
    return _generate(root, (stream_id(purpose), rank, worker, base_seed & ((1 << 64) - 1)))


def _parse_root(value: Any, where: str) -> int:
    try:
        root = int(value, 0) if isinstance(value, str) else value.__index__()
    except (AttributeError, TypeError, ValueError):
        raise UsageError(
            f"{where} must be a non-negative integer, got {value!r}",
            hint="pass an int such as 1234, or leave it out to draw one",
        ) from None
    if root < 0:
        raise UsageError(f"{where} must be non-negative, got {root}", hint="pass an int >= 0")
    return int(root)


def _draw() -> int:
    return int.from_bytes(os.urandom(8), "little")


def _resolve_root(root: Any, info: RankInfo) -> tuple[int, str]:
    env = os.environ.get("LEDGER_SEED_ROOT")
    if env:
        forced = _parse_root(env, "LEDGER_SEED_ROOT")
        if root is not None and _parse_root(root, "root") != forced:
            warn_once("seed-override", f"LEDGER_SEED_ROOT={forced} overrides root={root}")
        return forced, "env"
    if root is not None:
        return _parse_root(root, "root"), "argument"
    if not info.distributed:
        return _draw(), "urandom"
    run_id = os.environ.get("LEDGER_RUN_ID")
    if run_id:
        import blake3

        return int.from_bytes(blake3.blake3(run_id.encode()).digest()[:8], "little"), "run-id"
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        box = [_draw() if info.rank == 0 else None]
        dist.broadcast_object_list(box, src=0)
        return int(box[0]), "broadcast"  # type: ignore[arg-type]
    warn_once(
        "seed-ranks",
        "each rank drew its own root seed (no LEDGER_RUN_ID, torch.distributed not initialised); "
        "pass root= or call ledger.seed() after init_process_group to replay with one root",
    )
    return _draw(), "urandom-per-rank"


class Seeds:
    """The root seed of this run and the streams this process derived from it."""

    def __init__(self, root: int, source: str, rank: RankInfo | None = None) -> None:
        self.root = root
        self.source = source
        self.rank = rank or rank_info()
        self.streams: dict[str, int] = {}
        self.seeded: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    def derive(self, purpose: str = "main") -> int:
        """This rank's seed for ``purpose`` (recorded)."""
        value = _generate(self.root, (stream_id(purpose), self.rank.rank))
        with self._lock:
            new = self.streams.get(purpose) != value
            self.streams[purpose] = value
        if new:
            self.write()
        return value

    def numpy_generator(self, purpose: str) -> Any:
        """A registered ``numpy.random.Generator`` for ``purpose`` (its state is captured)."""
        import numpy as np

        from .rng import register_generator

        return register_generator(purpose, np.random.default_rng(self.derive(purpose)))

    def torch_generator(self, purpose: str, device: str = "cpu") -> Any:
        """A registered ``torch.Generator`` for ``purpose`` (imports torch)."""
        import torch

        from .rng import register_generator

        gen = torch.Generator(device=device)
        gen.manual_seed(self.derive(purpose))
        return register_generator(purpose, gen)

    def seed_globals(self, purpose: str = "main", *, torch: bool | None = None) -> list[str]:
        """Seed Python ``random``, NumPy's global generator and (if imported) torch."""
        import numpy as np

        value = self.derive(purpose)
        random.seed(value)
        np.random.seed([value & 0xFFFFFFFF, value >> 32])
        done = ["python", "numpy"]
        if torch or (torch is None and "torch" in sys.modules):
            import torch as _torch

            _torch.manual_seed(value)  # also every CUDA device
            done.append("torch")
        with self._lock:
            self.seeded[purpose] = done
        self.write()
        return done

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            return {
                "root": self.root,
                "root_source": self.source,
                "rank": self.rank.rank,
                "local_rank": self.rank.local_rank,
                "world_size": self.rank.world_size,
                "streams": dict(self.streams),
                "seeded": {k: list(v) for k, v in self.seeded.items()},
            }

    def write(self) -> None:
        from .run import current_run

        run = current_run()
        if run.run_dir is None:
            return
        try:
            write_json_atomic(run.file("seeds", ".json"), self.to_json())
        except OSError as e:
            warn_once("seeds-write", f"could not record seeds: {e}")

    def __repr__(self) -> str:
        return f"Seeds(root={self.root}, source={self.source!r}, rank={self.rank.rank})"


_current: Seeds | None = None
_lock = threading.Lock()


def current_seeds() -> Seeds:
    """The seeds of this process; resolves (and records) a root without seeding anything if
    ``seed()`` was not called."""
    global _current
    with _lock:
        if _current is None:
            info = rank_info()
            _current = Seeds(*_resolve_root(None, info), info)
            fresh = True
        else:
            fresh = False
    if fresh:
        _current.write()
    return _current


def seed(root: int | None = None, *, purpose: str = "main", torch: bool | None = None) -> Seeds:
    """Fix the run's root seed and seed Python, NumPy and torch for ``purpose`` on this rank.

    torch is seeded only if the script already imported it (``torch=None``); ``torch=True``
    imports it, ``False`` leaves it alone. Import torch before calling ``seed()``.
    """
    global _current
    info = rank_info()
    seeds = Seeds(*_resolve_root(root, info), info)
    with _lock:
        _current = seeds
    seeds.seed_globals(purpose, torch=torch)
    return seeds
