"""The run a training process belongs to: ``current_run()``, ``log()`` and RNG state files.

Under ``ledger record`` the process attaches to its run from the environment (``LEDGER_RUN_DIR``
and friends, plus torchrun's ``RANK``/``LOCAL_RANK``/``WORLD_SIZE``) and writes one stream of files
per rank into the staging dir. Without it, ``current_run()`` returns a *detached* run that works
the same but writes nothing: metrics stay in memory (the last ``MEMORY_POINTS``) so scripts run
unchanged with or without ``ledger``.

Seam for ``ledger.start()``: build ``Run(run_id=..., run_dir=..., store_dir=..., rank=...)`` for a
staging dir the recorder created, and make it current with ``set_current_run``.
"""

from __future__ import annotations

import atexit
import os
import re
import socket
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .._clock import clock_pair
from ._env import RankInfo, rank_info, run_env
from ._files import write_json_atomic
from ._warn import set_note_sink, warn_once
from .metrics import MetricWriter

if TYPE_CHECKING:  # pydantic costs ~100 ms to import; only RNG capture needs it
    from ..records.rng import RngState

__all__ = ["Run", "current_run", "log", "set_current_run"]

_LABEL = re.compile(r"[^A-Za-z0-9._-]")


def _safe_label(label: object) -> str:
    text = str(label)
    clean = _LABEL.sub("_", text)[:100] or "_"
    if clean != text:
        warn_once("bad-label", f"RNG state label {text!r} was saved as {clean!r}")
    return clean


class Run:
    """One process's view of a run. Detached (``run_dir`` None) runs write nothing."""

    def __init__(
        self,
        *,
        run_id: str | None = None,
        run_dir: Path | None = None,
        store_dir: Path | None = None,
        rank: RankInfo | None = None,
    ) -> None:
        self.run_id = run_id
        self.run_dir = Path(run_dir) if run_dir is not None else None
        self.store_dir = Path(store_dir) if store_dir is not None else None
        self.rank = rank or rank_info()
        self.started_at, mono_start = clock_pair()
        header = {
            "version": 1,
            "run_id": run_id,
            "rank": self.rank.rank,
            "local_rank": self.rank.local_rank,
            "world_size": self.rank.world_size,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "wall_start": self.started_at,
            # The monotonic clock's reading at wall_start (each point's "t" is counted from it):
            # what puts a point on another process's monotonic axis (a sweep's job bounds).
            "mono_start": mono_start,
        }
        path = self.file("metrics", ".jsonl") if self.run_dir is not None else None
        self._writer = MetricWriter(path, header, t0=mono_start)
        self._t0 = self._writer.t0
        if path is not None:
            atexit.register(self.close)

    @classmethod
    def from_env(cls) -> Run:
        run_id, run_dir, store_dir = run_env()
        return cls(run_id=run_id, run_dir=run_dir, store_dir=store_dir)

    @property
    def attached(self) -> bool:
        return self.run_dir is not None

    def elapsed(self) -> float:
        """Seconds since this process attached (monotonic; the wall axis of its metrics)."""
        return time.monotonic() - self._t0

    def file(self, kind: str, suffix: str, *, worker: int | None = None, label: str = "") -> Path:
        """``<run_dir>/<kind>/rank-<r>[-worker-<w>][-<label>]<suffix>``."""
        if self.run_dir is None:
            raise RuntimeError("a detached run has no files")
        name = f"rank-{self.rank.rank}"
        if worker is not None:
            name += f"-worker-{worker}"
        if label:
            name += f"-{label}"
        return self.run_dir / kind / f"{name}{suffix}"

    # -- metrics ------------------------------------------------------------------------------
    def log(self, step: Any = None, samples: Any = None, n: Any = None, **values: Any) -> None:
        """Record ``values`` at ``step``; ``samples``: samples (or tokens) seen so far by this rank;
        ``n``: real samples behind these values (the weight when ranks are combined)."""
        self._writer.add(step, samples, n, values)

    def note(self, text: str) -> None:
        """Keep a remark in the run record (written with the metrics)."""
        self._writer.note(text)

    def points(self) -> list[tuple[float, int | None, int | None, int | None, dict[str, Any]]]:
        """Points not yet flushed (seconds, step, samples, n, values); for a detached run, the
        last ``MEMORY_POINTS`` logged."""
        return [
            (item[0] - self._t0, *item[1:])
            for item in self._writer.buffer
            if not isinstance(item, str)
        ]

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()

    def __enter__(self) -> Run:
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if e is not None:
            self.note(f"run ended with {type(e).__name__}: {e}")
        self.close()

    # -- RNG states ---------------------------------------------------------------------------
    def save_rng_state(
        self,
        label: str,
        step: int | None = None,
        *,
        worker: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> RngState:
        """Capture every RNG of this process and write it to ``rng/`` (atomically). Saving the same
        label and step again replaces the file; pass ``step`` to keep one state per step."""
        from .rng import capture_rng

        state = capture_rng()
        if self.run_dir is None:
            return state
        name = _safe_label(label) + (f"-step{step}" if step is not None else "")
        body = {
            "label": str(label),
            "step": step,
            "rank": self.rank.rank,
            "worker": worker,
            "t": round(self.elapsed(), 6),
            "wall_start": self.started_at,
            "state": state.model_dump(mode="json"),
            **(extra or {}),
        }
        try:
            write_json_atomic(self.file("rng", ".json", worker=worker, label=name), body)
        except (OSError, TypeError, ValueError) as e:
            warn_once("rng-write", f"could not save RNG state {label!r}: {e}")
        return state

    def load_rng_state(
        self, label: str, step: int | None = None, *, worker: int | None = None
    ) -> RngState:
        """The state ``save_rng_state`` wrote for this rank (for an exact resume)."""
        import json

        from ..records.rng import RngState

        name = _safe_label(label) + (f"-step{step}" if step is not None else "")
        path = self.file("rng", ".json", worker=worker, label=name)
        return RngState.model_validate(json.loads(path.read_text(encoding="utf-8"))["state"])

    def restore_rng_state(
        self, label: str, step: int | None = None, *, worker: int | None = None
    ) -> list[str]:
        from .rng import restore_rng

        return restore_rng(self.load_rng_state(label, step, worker=worker))


_lock = threading.Lock()
_current: Run | None = None


def set_current_run(run: Run | None) -> Run | None:
    """Make ``run`` the process's current run (``ledger.start`` uses this); returns the old one."""
    global _current
    with _lock:
        old, _current = _current, run
    set_note_sink(run.note if run is not None else None)
    return old


def current_run() -> Run:
    """This process's run: attached under ``ledger record``, detached (in memory) otherwise."""
    global _current
    run = _current
    if run is None:
        with _lock:
            run = _current
            if run is None:
                run = _current = Run.from_env()
        set_note_sink(run.note)
    return run


def log(step: Any = None, samples: Any = None, n: Any = None, **values: Any) -> None:
    """``current_run().log(...)``."""
    run = _current
    if run is None:
        run = current_run()
    run._writer.add(step, samples, n, values)


def _after_fork_in_child() -> None:
    run = _current
    if run is not None:
        run._writer.forget_after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)
