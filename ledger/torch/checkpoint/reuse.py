"""Skip re-hashing unchanged tensors by comparing their bytes with what the last save wrote.

A chunk object this process wrote (or found already stored and compared equal) is mapped
read-only from its object file. At the next save of the same tensor key into the same ledger,
the chunk's bytes are compared with the mapping (``memcmp``, no float comparison: ``-0.0`` and
``0.0`` differ, NaN payloads count); equal bytes reuse the id, anything else is hashed and
written as before. Why this is safe: a raw object file holds exactly the bytes its id is the
hash of (objects are never written in place), so equal bytes have that id.

Cost: the mapped files are in the page cache, not the process's heap; the kernel can drop
them under memory pressure (the next comparison then reads them back from disk), and once
compared they count in RSS as file-backed pages. At most ``BUDGET`` bytes are mapped per
process (a quarter of physical memory, or of the cgroup's memory limit); chunks beyond it,
compressed chunks and chunks under ``MIN_BYTES`` are hashed at every save. A chunk's new
object that replaces a mapping whose pages were resident is mapped with its page tables filled
(``MAP_POPULATE``, ``remember``): the save after one that replaced every tensor took 500 page
faults comparing through fresh mappings.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import queue
import threading
from collections import OrderedDict
from typing import Any

from ...errors import CorruptObjectError
from ...store import ObjectStore
from ...store.objects import raw_payload_offset
from ...store.safe_read import NotRegularError, open_regular

__all__ = [
    "BUDGET",
    "MEMCMP",
    "MIN_BYTES",
    "forget",
    "keep_only",
    "last_change",
    "likely_new",
    "remember",
    "reused",
]

MIN_BYTES = 64 << 10  # smaller chunks hash in microseconds; not worth a mapping each
_STORES = 4  # ledgers remembered per process (least recently saved to is dropped first)
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)  # Linux's: a mapping's page tables filled at once


def _budget() -> int:
    """A quarter of the memory this process may use: physical memory, or its cgroup's limit."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        total = 16 << 30
    for limit in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(limit) as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total // 4


BUDGET = _budget()


def _memcmp() -> Any:
    """libc's memcmp (called without the GIL), or None where there is none to load."""
    if os.name == "nt":  # a mapped file cannot be deleted there: gc would fail while we run
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        fn = libc.memcmp
    except (OSError, AttributeError, TypeError):
        return None
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    return fn


MEMCMP = _memcmp()


class _Mapped:
    """One object file mapped read-only; ``addr`` points at its content, ``at`` bytes into
    the file (after its header, ``objects.raw_payload_offset``). ``changed``: whether the
    save that mapped it found the chunk changed since the save before (and no save has found
    it unchanged since)."""

    def __init__(self, oid: str, mm: mmap.mmap, at: int, size: int, changed: bool) -> None:
        import numpy as np

        self.oid, self.mm, self.at, self.size, self.changed = oid, mm, at, size, changed
        self.compared = False  # found equal at a save: every page was read, all resident
        self.addr = int(np.frombuffer(mm, dtype=np.uint8).ctypes.data) + at

    def readable(self, size: int) -> bool:
        """Whether ``size`` bytes may be read through the mapping: the chunk's own size, still
        mapped, and the file not cut short since. An object file is never truncated in place,
        but a damaged one may be, and reading a mapping past its file's end is SIGBUS (the
        process dies), not an error: every read checks this first."""
        return size == self.size and not self.mm.closed and self.mm.size() == self.at + size

    def equals(self, addr: int, size: int) -> bool:
        if not self.readable(size):
            return False
        return bool(MEMCMP(addr, self.addr, size) == 0)

    def close(self) -> None:
        self.mm.close()


_lock = threading.Lock()
# ledger objects root -> {(tensor key, chunk index): mapping}
_maps: OrderedDict[str, dict[tuple[str, int], _Mapped]] = OrderedDict()
_mapped_bytes = 0


def _address(data: memoryview) -> int:
    import numpy as np

    return int(np.frombuffer(data, dtype=np.uint8).ctypes.data)


_PROBE = 4 << 10


def last_change(objects: ObjectStore, key: str, index: int) -> bool | None:
    """None when no earlier save of chunk ``index`` of ``key`` into this ledger is mapped;
    else whether that save found the chunk changed since the one before it. ``io``
    writes a chunk around the page cache only when it changes at two saves in a row: such a
    chunk will likely change again, while one that changed once after staying the same (all
    tensors replaced, then fine-tuned) is compared by the next save, which must find its
    bytes in the page cache, not read them back from the disk."""
    with _lock:
        m = _maps.get(str(objects.root), {}).get((key, index))
        return None if m is None else m.changed


def likely_new(objects: ObjectStore, key: str, index: int, data: memoryview) -> bool:
    """True unless the chunk has a mapping whose first and last 4 KiB equal its own: a hint
    for scheduling (write the changed chunks first, while the rest are compared), never a
    verdict; ``reused`` compares every byte."""
    if MEMCMP is None or len(data) < MIN_BYTES:
        return True
    with _lock:
        m = _maps.get(str(objects.root), {}).get((key, index))
    if m is None or not m.readable(len(data)):
        return True
    addr, tail = _address(data), len(data) - _PROBE
    return bool(
        MEMCMP(addr, m.addr, _PROBE) != 0 or MEMCMP(addr + tail, m.addr + tail, _PROBE) != 0
    )


def reused(objects: ObjectStore, key: str, index: int, data: memoryview) -> str | None:
    """The id of chunk ``index`` of tensor ``key`` if its bytes equal the last save's (and the
    object is still stored, touched for gc like any reused object); else None."""
    if MEMCMP is None or len(data) < MIN_BYTES:
        return None
    with _lock:
        m = _maps.get(str(objects.root), {}).get((key, index))
    # Compared first, touched only if equal: a changed chunk's comparison ends at its first
    # differing byte, while a touch waits for the file system's journal, which the save's own
    # chunk fsyncs keep busy (the five changed chunks of a 200 MB save touched their old
    # objects for 80 us each, at the save's start). An object gc took since it was mapped
    # still has its bytes in the mapping: equal, but gone, so the touch says not reused.
    if m is None or not m.equals(_address(data), len(data)):
        return None
    if not objects.touch(m.oid):
        return None
    m.changed = False  # found unchanged: a run of changes ends here
    m.compared = True
    return m.oid


def remember(
    objects: ObjectStore,
    key: str,
    index: int,
    oid: str,
    data: memoryview,
    written: bool,
    changed: bool,
    cached: bool,
) -> None:
    """Map the object ``oid`` just stored for chunk ``index`` of ``key``, for the next save;
    ``changed``: this save found the chunk different from the earlier save's mapping;
    ``cached``: it was written through the page cache. Its pages are then mapped at once if
    the mapping it replaces had its pages in (compared in full at a save), so the next save
    compares it without page faults and RSS stays as it was; not after a first save (no RSS
    until the next save compares), nor for an object written around the page cache (that
    would read it from the disk).

    An object this call did not write (it was already stored) is kept only if its file holds
    exactly ``data``, which hashed to ``oid``: the mapping must never vouch for bytes that
    were not checked.
    """
    global _mapped_bytes
    if MEMCMP is None or len(data) < MIN_BYTES:
        return
    root = str(objects.root)
    with _lock:
        old = _maps.get(root, {}).pop((key, index), None)
        if old is not None:
            _mapped_bytes -= old.size
        # Checked and reserved under the lock: saves write chunks from several threads, and
        # two that both read the count before either added to it would overrun the budget.
        fits = _mapped_bytes + len(data) <= BUDGET
        if fits:
            _mapped_bytes += len(data)
    if old is not None:
        _retire([old])
    if not fits:
        return
    m = _map(objects, oid, len(data), changed, cached and old is not None and old.compared)
    if m is None or (not written and not m.equals(_address(data), len(data))):
        if m is not None:
            m.close()
        with _lock:
            _mapped_bytes -= len(data)
        return
    with _lock:
        _maps.setdefault(root, {})[(key, index)] = m
        while len(_maps) > _STORES:
            _drop(_maps.popitem(last=False)[1].values())
    _start_reaper()


def _map(
    objects: ObjectStore, oid: str, size: int, changed: bool, populate: bool
) -> _Mapped | None:
    try:
        with open_regular(objects.path_of(oid)) as f:
            at = raw_payload_offset(f.fileno(), oid=oid)
            if at is None or os.fstat(f.fileno()).st_size != at + size:
                return None  # compressed (its file is not the bytes), or not the chunk's size
            flags = mmap.MAP_SHARED | (_POPULATE if populate else 0)
            mm = mmap.mmap(f.fileno(), 0, flags=flags, prot=mmap.PROT_READ)
    except (OSError, ValueError, NotRegularError, CorruptObjectError):
        return None
    return _Mapped(oid, mm, at, size, changed)


def _drop(maps: Any) -> None:
    global _mapped_bytes
    maps = list(maps)
    for m in maps:
        _mapped_bytes -= m.size
    _retire(maps)


# Unmapping the last mapping of a file gc deleted frees its page cache, which takes as long
# as writing it did; a thread of its own does it, not the save that found the mapping stale.
_retired: queue.SimpleQueue[_Mapped] = queue.SimpleQueue()
_reaper: threading.Thread | None = None
_reaper_lock = threading.Lock()


def _retire(maps: list[_Mapped]) -> None:
    for m in maps:
        _retired.put(m)
    if maps:
        _start_reaper()


def _start_reaper() -> None:
    """Start the unmapping thread unless it runs. ``remember`` starts it with the first
    mapping, so the save that first retires one does not wait for a thread to start."""
    global _reaper
    with _reaper_lock:  # not ``_lock``: mappings are retired while it is held
        if _reaper is not None and _reaper.is_alive():
            return
        _reaper = threading.Thread(target=_unmap_forever, name="ledger-unmap", daemon=True)
        _reaper.start()


def _unmap_forever() -> None:
    while True:
        _retired.get().close()


def keep_only(objects: ObjectStore, keys: set[tuple[str, int]]) -> None:
    """After a save: forget this ledger's mappings of chunks the save did not have, and make
    the ledger the last one dropped (a save that reused every chunk remembered nothing new,
    but it was saved to all the same)."""
    root = str(objects.root)
    with _lock:
        maps = _maps.get(root, {})
        gone = [maps.pop(k) for k in list(maps) if k not in keys]
        _drop(gone)
        if root in _maps:
            _maps.move_to_end(root)


def forget(objects: ObjectStore | None = None) -> None:
    """Unmap the mappings into one ledger's objects (all ledgers without ``objects``), now,
    on this thread: before deleting a ledger, say, so its files' pages are freed here."""
    global _mapped_bytes
    with _lock:
        roots = list(_maps) if objects is None else [str(objects.root)]
        gone = [m for root in roots for m in _maps.pop(root, {}).values()]
        for m in gone:
            _mapped_bytes -= m.size
    for m in gone:
        m.close()
