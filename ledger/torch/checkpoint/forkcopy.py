"""Copy tensors into fresh memory without holding the caller: a forked child copies them.

A background save must hold the bytes of the call even if training changes the tensors the
moment it returns. Copying into staging buffers the process already has costs little, but the
first save of a process has none, and faulting in fresh pages is slower than the copy itself
(400 MB: 0.5 s, as long as ``torch.save``). ``fork()`` instead gives a child a copy-on-write
image of the memory as it is at the call, in tens of milliseconds; the child writes the
tensors' bytes into a shared memory file the parent has mapped (the new staging buffers) and
exits, while the caller trains on. Redis's BGSAVE makes the same trade: until the child exits,
the first write to each page of the caller's tensors copies that page.

The child only loops over ``os.pwrite`` and leaves with ``os._exit``: no locks, no torch, no
threads, so forking a threaded process is safe here. Linux only (``memfd_create``); where fork
or the shared file is refused, the caller copies in place as before.
"""

from __future__ import annotations

import mmap
import os
import warnings
from typing import Any

import torch

from ...errors import LedgerError

__all__ = ["ForkedCopy", "available", "fork_copy", "pays"]

_ALIGN = 64
# fork() copies the page tables of the whole resident process: here about 60 ms a GB against
# 1.2 s a GB to fault in and fill fresh pages, so forking pays from about 1/20 of the resident
# size; 1/16 leaves a margin.
_RSS_SHARE = 16


def available() -> bool:
    return hasattr(os, "memfd_create") and hasattr(os, "fork")


def pays(nbytes: int, at_least: int) -> bool:
    """Whether a child should copy ``nbytes`` of fresh buffers rather than this process: from
    ``at_least`` bytes, and a large enough share of the process's resident memory."""
    if nbytes < at_least or not available():
        return False
    try:
        with open("/proc/self/statm", "rb") as f:
            resident = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return True
    return nbytes * _RSS_SHARE >= resident


class ForkedCopy:
    """A child copying into shared buffers; ``wait()`` before anyone reads them."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def wait(self) -> None:
        _pid, status = os.waitpid(self.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
            raise LedgerError(
                f"the process copying the tensors of a background checkpoint save {how}",
                hint="nothing was published; the previous checkpoint is still the latest",
            )


def fork_copy(
    tensors: list[tuple[torch.Tensor, Any]],
) -> tuple[list[torch.Tensor], ForkedCopy | None]:
    """New buffers for ``(like, raw)`` pairs (a tensor to match, the bytes to copy into it).

    The buffers lie in one shared memory file; a forked child fills them (returned handle,
    to wait for), or, if the fork is refused, this process does before returning (None).
    """
    offsets, size = [], 0
    for like, _raw in tensors:
        offsets.append(size)
        size += -(-like.numel() * like.element_size() // _ALIGN) * _ALIGN
    fd = os.memfd_create("ledger-staging")
    try:
        os.ftruncate(fd, max(size, 1))
        region = mmap.mmap(fd, max(size, 1))  # shared: the child's writes land in it
        buffers = []
        for (like, _raw), off in zip(tensors, offsets, strict=True):
            n = like.numel() * like.element_size()
            flat = torch.frombuffer(region, dtype=torch.uint8, count=n, offset=off)
            buffers.append(flat.view(like.dtype).reshape(like.shape))
        views = [memoryview(raw) for _like, raw in tensors]
        try:
            with warnings.catch_warnings():  # 3.12+ warns on forking a threaded process
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
        except OSError:  # no memory for the child's page tables, too many processes
            _write(fd, views, offsets)
            return buffers, None
        if pid == 0:  # pragma: no cover - the child; coverage does not follow it
            code = 0
            try:
                _write(fd, views, offsets)
            except BaseException:
                code = 1
            os._exit(code)
        return buffers, ForkedCopy(pid)
    finally:
        os.close(fd)  # the mapping keeps the memory


def _write(fd: int, views: list[memoryview], offsets: list[int]) -> None:
    for view, off in zip(views, offsets, strict=True):
        done = 0
        while done < len(view):
            done += os.pwrite(fd, view[done:], off + done)
