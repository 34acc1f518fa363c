"""Background saves: copy the tensors, return to training, hash/write/publish in a thread.

The guarantees of a foreground save hold, because the thread runs the same steps in the same
order (``save``): nothing is published until every object and shard manifest is durable,
so a process killed while the thread works leaves ``latest`` on the previous checkpoint.

- **Copy on save.** The caller's tensors are copied (on the CPU) before ``save_checkpoint``
  returns, so training may change them at once. The copies go into staging buffers kept from
  one background save to the next (pinned for CUDA tensors), so a save does not pay for
  fresh pages: memory is one copy of this rank's tensors, held between saves too.
- **One save in flight.** Any save (background or not) first waits for the previous one (saves
  called from several threads at once take turns, ``caller_lock``); so does
  interpreter exit: the saves run on one thread kept for the process (starting a thread per
  save made the caller wait until it ran, milliseconds on a busy machine), a daemon, and
  exit waits for the save in flight in a hook that ``threading`` runs before it joins the
  other threads, while threads can still be started (it uses plain threads, never an executor,
  which would refuse work once shutdown has begun).
- **Failures are not lost.** An error in the thread is raised by ``PendingCheckpoint.wait()``,
  or by the next save if nobody waited, or printed to stderr at exit.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import queue
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import torch

from . import forkcopy
from .common import CheckpointInfo
from .io import map_threads
from .reuse import MEMCMP

__all__ = [
    "PendingCheckpoint",
    "caller_lock",
    "snapshot",
    "start",
    "take_copying",
    "wait_for_checkpoints",
    "wait_inflight",
]

_lock = threading.Lock()
# Held by save_checkpoint from waiting for the save in flight until its own save has started
# (background) or finished (foreground), so saves called from several threads take turns.
caller_lock = threading.RLock()
_inflight: PendingCheckpoint | None = None
# Test hook: when set, the thread waits for this event before writing anything, so a test can
# change the caller's tensors while the save is certainly still in its background phase.
_gate: threading.Event | None = None


class PendingCheckpoint:
    """A save running in the background; ``wait()`` returns its ``CheckpointInfo``."""

    def __init__(self, step: int, blocked_seconds: float) -> None:
        self.step = step
        #: seconds ``save_checkpoint`` held the caller (validation, state_dict(), the copy)
        self.blocked_seconds = blocked_seconds
        self._done = threading.Event()
        self._info: CheckpointInfo | None = None
        self._error: BaseException | None = None
        self._reported = False
        self._thread: threading.Thread | None = None

    def done(self) -> bool:
        """True once the save has published (or failed)."""
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> CheckpointInfo:
        """Block until published; the info, or the save's error. ``TimeoutError`` on timeout."""
        if not self._done.wait(timeout):
            raise TimeoutError(f"the background save of step {self.step} is still running")
        self._reported = True
        if self._error is not None:
            raise self._error
        if self._info is None:
            raise TypeError(f"the background save of step {self.step} ended without a result")
        return self._info

    def __repr__(self) -> str:
        state = "done" if self.done() else "running"
        return f"<PendingCheckpoint step={self.step} {state}>"

    def _run(self, work: Callable[[], CheckpointInfo]) -> None:
        try:
            if _gate is not None:
                _gate.wait()
            self._info = work()
        except BaseException as e:  # kept for wait(); a thread has nobody else to tell
            self._error = e
        finally:
            self._done.set()


# Staging buffers of the last background save, by tensor key, reused by the next one: a new
# 400 MB allocation costs more in page faults than the copy into it (docs/benchmarks.md).
# Only touched by the caller's thread, and only once the previous save is done (wait_inflight).
_staging: dict[str, torch.Tensor] = {}
_PIECE = 4 << 20  # copies are split into pieces of this size, spread over a few threads
_COPY_THREADS = max(1, min(4, os.cpu_count() or 1))
# Fresh bytes from which a first save forks its copy (forking costs tens of ms for a large
# process, more than copying a few MB).
_FORK_MIN = 32 << 20
# The child still copying the last snapshot's fresh buffers (``take_copying``).
_copying: forkcopy.ForkedCopy | None = None


def snapshot(tensors: list[tuple[str, torch.Tensor]]) -> list[tuple[str, torch.Tensor]]:
    """Contiguous CPU copies of ``tensors``, so the caller may modify the originals at once.

    The copies go into the previous background save's buffers where key, shape and dtype
    match (pinned memory for CUDA tensors); buffers of keys this save lacks are freed. Plain
    CPU tensors without such a buffer (a process's first save) are copied by a forked child
    into new shared buffers (``forkcopy``) where that pays (``_fork_pays``); the save's
    thread waits for it (``take_copying``) before reading them.
    """
    global _copying
    out: list[tuple[str, torch.Tensor]] = []
    pieces: list[tuple[Any, Any, bool]] = []
    fresh: list[tuple[int, torch.Tensor, Any]] = []  # (index in out, source, its bytes)
    devices: set[torch.device] = set()
    for key, t in tensors:
        src = t.detach()
        plain = src.device.type == "cpu" and src.is_contiguous()
        plain = plain and not (src.is_conj() or src.is_neg()) and bool(src.numel())
        if plain and not _kept(key, src):
            fresh.append((len(out), src, _bytes(src)))
            out.append((key, src))  # replaced by its new buffer below
            continue
        copy, kept = _buffer(key, src)
        out.append((key, copy))
        if plain:
            # Byte copies on plain threads: torch's copy_ goes to its intra-op thread pool,
            # which on a busy machine was 10-40x slower than memcpy (docs/benchmarks.md).
            dst, raw = _bytes(copy), _bytes(src)
            pieces.extend(
                (dst[i : i + _PIECE], raw[i : i + _PIECE], kept) for i in range(0, len(raw), _PIECE)
            )
        else:  # resolves conj/neg views and strides; a device copy is awaited below
            if src.device.type == "cuda":
                devices.add(src.device)
            copy.copy_(src, non_blocking=copy.is_pinned())
    if fresh and not _fork_pays(sum(len(raw) for _i, _s, raw in fresh)):
        for i, src, raw in fresh:
            copy, _ = _buffer(out[i][0], src)
            out[i] = (out[i][0], copy)
            pieces.extend(
                (_bytes(copy)[j : j + _PIECE], raw[j : j + _PIECE], False)
                for j in range(0, len(raw), _PIECE)
            )
        fresh = []
    map_threads(lambda p: _copyto(*p), pieces, _COPY_THREADS)
    for device in devices:  # the copies were queued on each device's stream
        torch.cuda.synchronize(device)
    keys = {key for key, _t in out}
    for key in [k for k in _staging if k not in keys]:
        del _staging[key]
    if fresh:  # last: the child's image is the memory as the caller left it, copies done
        buffers, _copying = forkcopy.fork_copy([(src, raw) for _i, src, raw in fresh])
        for (i, _src, _raw), buf in zip(fresh, buffers, strict=True):
            out[i] = (out[i][0], buf)
            _staging[out[i][0]] = buf
    return out


def take_copying() -> forkcopy.ForkedCopy | None:
    """The child still filling the last ``snapshot``'s new buffers (the save's thread waits
    for it before reading them), or None; called once, right after ``snapshot``."""
    global _copying
    copying, _copying = _copying, None
    return copying


def _fork_pays(nbytes: int) -> bool:
    """Whether a child copies this many fresh bytes (tests make it always)."""
    return forkcopy.pays(nbytes, _FORK_MIN)


def _kept(key: str, src: torch.Tensor) -> bool:
    buf = _staging.get(key)
    return (
        buf is not None
        and buf.shape == src.shape
        and buf.dtype == src.dtype
        and not buf.is_pinned()
    )


def _buffer(key: str, src: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """The staging buffer for ``key``, and whether it is the last background save's."""
    pin = src.device.type == "cuda"
    buf = _staging.get(key)
    if buf is None or buf.shape != src.shape or buf.dtype != src.dtype or buf.is_pinned() != pin:
        buf = torch.empty(src.shape, dtype=src.dtype, device="cpu", pin_memory=pin)
        _staging[key] = buf
        return buf, False
    return buf, True


def _copyto(dst: Any, src: Any, kept: bool) -> None:
    """Copy unless a kept buffer already holds these bytes: comparing reads two streams,
    copying reads one and writes one, so unchanged tensors stage faster (a new buffer is not
    compared: reading its fresh pages would fault them in twice)."""
    import numpy as np

    if kept and MEMCMP is not None and MEMCMP(dst.ctypes.data, src.ctypes.data, len(src)) == 0:
        return
    np.copyto(dst, src)


def _bytes(t: torch.Tensor) -> Any:
    return t.reshape(-1).view(torch.uint8).numpy()


def wait_inflight() -> None:
    """Wait for the save in flight, if any; raise its error if nobody has seen it yet."""
    global _inflight
    with _lock:
        pending = _inflight
    if pending is None:
        return
    pending._done.wait()
    with _lock:
        if _inflight is pending:
            _inflight = None
    if pending._error is not None and not pending._reported:
        pending._reported = True
        raise pending._error


def wait_for_checkpoints() -> None:
    """Wait until no background save is in flight; raise its error if nobody has seen it.

    Call it before ``torch.distributed.destroy_process_group()``: a background save of a
    sharded checkpoint still talks to the other ranks.
    """
    wait_inflight()


# The thread that runs background saves, one after the other, and its queue of saves.
_saves: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
_saver: threading.Thread | None = None
_saver_lock = threading.Lock()


def _serve() -> None:
    while True:
        _saves.get()()


def _wait_at_exit() -> None:
    """Run by ``threading`` at interpreter exit, before it joins non-daemon threads: the save
    in flight finishes (the saver is a daemon and would otherwise be stopped with the
    interpreter); its error, if nobody saw it, is printed by ``_report_at_exit``."""
    with _lock:
        pending = _inflight
    if pending is not None:
        pending._done.wait()


def _start_saver() -> threading.Thread:
    global _saver
    with _saver_lock:
        if _saver is None or not _saver.is_alive():
            if _saver is None:
                # A save started once shutdown has begun is waited for by ``_report_at_exit``.
                with contextlib.suppress(RuntimeError):
                    threading._register_atexit(_wait_at_exit)  # type: ignore[attr-defined]
            _saver = threading.Thread(target=_serve, name="ledger-checkpoint", daemon=True)
            _saver.start()
        return _saver


def _after_fork() -> None:
    """A forked child has no saver thread, and no business with its parent's queued save."""
    global _saves, _saver_lock
    _saves, _saver_lock = queue.SimpleQueue(), threading.Lock()


os.register_at_fork(after_in_child=_after_fork)


def start(step: int, blocked_since: float, work: Callable[[], CheckpointInfo]) -> PendingCheckpoint:
    """Run ``work`` on the saver thread and return its handle (the caller waited for the last
    save; the saver is started by the first)."""
    global _inflight
    pending = PendingCheckpoint(step, time.perf_counter() - blocked_since)
    pending._thread = _start_saver()
    with _lock:
        _inflight = pending
    _saves.put(lambda: pending._run(work))
    return pending


@atexit.register
def _report_at_exit() -> None:
    """The save was waited for before atexit runs (``_wait_at_exit``); say so if it failed
    unseen."""
    with _lock:
        pending = _inflight
    if pending is None:
        return
    pending._done.wait()
    if pending._error is not None and not pending._reported:
        sys.stderr.write(
            f"ledger: error: the background checkpoint save of step {pending.step} failed: "
            f"{pending._error}\nledger: hint: the previous checkpoint is still the latest\n"
        )
