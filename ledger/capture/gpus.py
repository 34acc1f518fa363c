"""The GPUs of the environment fingerprint: ``nvidia-smi``'s answer, asked early.

``nvidia-smi`` takes from tens to hundreds of milliseconds (more without persistence mode), and
the fingerprint is taken before every launch. ``prefetch`` starts it in a thread as soon as
``ledger record`` starts, so that it runs while the recorder imports and snapshots the code;
the fingerprint then takes that answer (``answer``), still from before the launch. Nothing here
imports more than the standard library: it runs before the rest of the recorder is imported.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time

__all__ = ["answer", "prefetch"]

NVIDIA_SMI_TIMEOUT_S = 5.0
QUERY = ("--query-gpu=name,driver_version,memory.total", "--format=csv,noheader")
# An answer older than this is not used: the fingerprint asks again.
_FRESH_S = 60.0

_lock = threading.Lock()
_pending: tuple[threading.Thread, dict[str, str | None], float] | None = None


def _ask() -> str | None:
    """``nvidia-smi``'s CSV lines, or None without it (or when it fails)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        proc = subprocess.run(
            [exe, *QUERY],
            capture_output=True,
            text=True,
            timeout=NVIDIA_SMI_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def prefetch() -> None:
    """Ask ``nvidia-smi`` in a thread now (once; a pending question is not asked again)."""
    global _pending
    if shutil.which("nvidia-smi") is None:
        return
    with _lock:
        if _pending is not None:
            return
        box: dict[str, str | None] = {}
        thread = threading.Thread(
            target=lambda: box.update(text=_ask()), name="ledger-nvidia-smi", daemon=True
        )
        _pending = (thread, box, time.monotonic())
    thread.start()


def answer() -> str | None:
    """``nvidia-smi``'s answer: the prefetched one if it is fresh (taken once), else asked now."""
    global _pending
    with _lock:
        pending, _pending = _pending, None
    if pending is not None:
        thread, box, started = pending
        thread.join()
        if "text" in box and time.monotonic() - started < _FRESH_S:
            return box["text"]
    return _ask()
