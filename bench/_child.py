"""One measured operation in a fresh process, so its peak RSS is its own:
``python -m bench._child OP SRC DST`` prints ``{"seconds": s, "rss_growth": bytes}``."""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
import time
from pathlib import Path

from ledger._hashing import hash_file
from ledger.store import Store


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def _copy(src: str, dst: str) -> None:
    shutil.copyfile(src, dst)
    with open(dst, "rb+") as f:
        os.fsync(f.fileno())


def _put(src: str, dst: str) -> None:
    _STORES[dst].objects.put_file(src)


# Set up before the clock starts: put_file is what is measured, not creating a ledger.
_STORES: dict[str, Store] = {}


def _setup(op: str, dst: str) -> None:
    if op == "put":
        _STORES[dst] = Store.init(dst)


def _get(src: str, dst: str) -> None:
    # src: "<ledger dir>:<oid>"
    root, oid = src.rsplit(":b3:", 1)
    with open(dst, "wb") as f:
        Store.open(root).objects.copy_to("b3:" + oid, f)
        f.flush()
        os.fsync(f.fileno())


OPS = {"copy": _copy, "hash": lambda s, d: hash_file(s), "put": _put, "get": _get}

if __name__ == "__main__":
    op, src, dst = sys.argv[1:4]
    _setup(op, dst)
    base = _status("VmHWM")
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    OPS[op](src, dst)
    seconds = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    print(json.dumps({"seconds": seconds, "cpu": cpu, "rss_growth": _status("VmHWM") - base}))
