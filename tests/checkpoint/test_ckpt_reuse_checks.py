"""The bounds of chunk-id reuse (``ledger.torch.checkpoint.reuse``): which chunks are compared at
all, how many ledgers and bytes stay mapped, and that a mapping never vouches for bytes past
its own end or outlives the chunk it stood for.

A bug here stores a wrong chunk id, which is a corrupt checkpoint nobody notices until a load,
or keeps files mapped for the life of the process. Pinned because mutation testing (issue #18)
found these untested.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _support import subprocess_env

from ledger._hashing import hash_bytes
from ledger.store import Store

torch = pytest.importorskip("torch")

from ledger.torch.checkpoint import reuse as ckpt_reuse  # noqa: E402
from ledger.torch.checkpoint.io import write_tensors  # noqa: E402

pytestmark = pytest.mark.torch

N = 40_000  # 160 KB of float32: above ckpt_reuse.MIN_BYTES
on_linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")
compares = pytest.mark.skipif(ckpt_reuse.MEMCMP is None, reason="no memcmp to compare with")


@pytest.fixture(autouse=True)
def _fresh_mappings() -> Iterator[None]:
    ckpt_reuse.forget()
    yield
    ckpt_reuse.forget()


def _reused(store: Store, tensors: list[tuple[str, Any]]) -> int:
    return write_tensors(store.objects, tensors)[1].bytes_reused


@compares
def test_a_chunk_of_64_kib_is_compared_and_a_smaller_one_hashed(store: Store) -> None:
    exact = torch.randn(16 * 1024)  # 64 KiB
    under = torch.randn(16 * 1024 - 1)
    write_tensors(store.objects, [("exact", exact), ("under", under)])
    assert _reused(store, [("exact", exact), ("under", under)]) == 64 << 10


@compares
@pytest.mark.parametrize("how", ["shrank", "grew"])
def test_a_tensor_that_changed_size_never_gets_its_old_id(store: Store, how: str) -> None:
    t = torch.randn(N)
    write_tensors(store.objects, [("t", t)])
    # Shrunk, its bytes are a prefix of the old chunk's: equal as far as they go.
    new = t[: N - 1000].clone() if how == "shrank" else torch.cat([t, torch.randn(1000)])
    entries, stats = write_tensors(store.objects, [("t", new)])
    assert stats.bytes_reused == 0
    assert entries[0].chunks == [hash_bytes(new.numpy().tobytes())]


@compares
def test_an_object_file_cut_short_is_not_read_past_its_end(store: Store) -> None:
    t = torch.randn(N)
    entries, _ = write_tensors(store.objects, [("t", t)])
    path = store.objects.path_of(entries[0].chunks[0])
    os.chmod(path, 0o644)
    os.truncate(path, 4096)  # damaged in place, while this process has it mapped
    again, stats = write_tensors(store.objects, [("t", t)])
    assert stats.bytes_reused == 0  # a mismatch, not a SIGBUS
    assert again[0].chunks == entries[0].chunks  # the id is still the hash of the bytes


@compares
def test_a_stored_object_holding_other_bytes_never_vouches_for_them(store: Store) -> None:
    t = torch.randn(N)
    entries, _ = write_tensors(store.objects, [("t", t)])
    oid = entries[0].chunks[0]
    ckpt_reuse.forget()  # a new process: the object is in the store, nothing is mapped
    later = t.clone()
    later[7] += 1.0  # what the next save will hold
    path = store.objects.path_of(oid)
    os.chmod(path, 0o644)
    path.write_bytes(b"\x00" + later.numpy().tobytes())  # damaged: the later bytes, raw
    write_tensors(store.objects, [("t", t)])  # found stored by its id: mapped only if equal
    again, stats = write_tensors(store.objects, [("t", later)])
    assert stats.bytes_reused == 0
    assert again[0].chunks == [hash_bytes(later.numpy().tobytes())]  # never the old id


@compares
def test_the_four_ledgers_saved_to_last_are_remembered(tmp_path: Path) -> None:
    a, b, c, d, e = (Store.init(tmp_path / name) for name in "abcde")
    t = [("t", torch.randn(N))]
    for st in (a, b, c, d):
        write_tensors(st.objects, t)
    assert _reused(a, t) == N * 4  # a is now the one saved to last, b the least recent
    write_tensors(e.objects, t)  # a fifth ledger: b's mappings are dropped
    assert [_reused(st, t) for st in (c, d, a, e)] == [N * 4] * 4
    assert _reused(b, t) == 0


@compares
def test_a_changed_chunk_s_new_mapping_replaces_the_old_within_the_budget(
    store: Store, monkeypatch: Any
) -> None:
    monkeypatch.setattr(ckpt_reuse, "BUDGET", N * 4)  # room for one chunk
    t = torch.randn(N)
    write_tensors(store.objects, [("t", t)])
    for _ in range(3):
        t[0] += 1.0
        _, changed = write_tensors(store.objects, [("t", t)])
        assert changed.bytes_new == N * 4
        assert _reused(store, [("t", t)]) == N * 4


@compares
def test_chunks_a_save_no_longer_holds_give_back_their_budget(
    store: Store, monkeypatch: Any
) -> None:
    monkeypatch.setattr(ckpt_reuse, "BUDGET", N * 4)  # room for one chunk
    a, b = [("a", torch.randn(N))], [("b", torch.randn(N))]
    write_tensors(store.objects, a)
    for _ in range(2):  # b is mapped once the save without a let a's mapping go
        write_tensors(store.objects, b)
    assert _reused(store, b) == N * 4


@compares
def test_forgetting_gives_back_the_budget(store: Store, monkeypatch: Any) -> None:
    monkeypatch.setattr(ckpt_reuse, "BUDGET", N * 4)  # room for one chunk
    t = [("t", torch.randn(N))]
    write_tensors(store.objects, t)
    ckpt_reuse.forget(store.objects)
    write_tensors(store.objects, t)  # compared with the stored object, mapped again
    assert _reused(store, t) == N * 4


def _mapped_under(root: Path) -> list[str]:
    text = Path("/proc/self/maps").read_text()
    return [line for line in text.splitlines() if str(root) in line]


@compares
@on_linux
def test_forgetting_a_ledger_unmaps_its_files_at_once(store: Store) -> None:
    write_tensors(store.objects, [("t", torch.randn(N))])
    assert _mapped_under(store.objects.root)
    ckpt_reuse.forget(store.objects)
    assert _mapped_under(store.objects.root) == []


@compares
@on_linux
def test_a_mapping_the_next_save_no_longer_needs_is_unmapped(store: Store) -> None:
    write_tensors(store.objects, [("a", torch.randn(N))])
    assert _mapped_under(store.objects.root)
    write_tensors(store.objects, [("small", torch.arange(4.0))])  # "a" is gone from the state
    deadline = time.monotonic() + 10.0  # a thread of its own unmaps it
    while _mapped_under(store.objects.root) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _mapped_under(store.objects.root) == []


@compares
def test_a_process_whose_mappings_were_retired_still_exits(tmp_path: Path) -> None:
    """The unmapping thread waits forever for work: were it not a daemon, a training script
    whose state lost a tensor between two saves would hang when it finishes."""
    code = (
        "import torch\n"
        "from ledger.store import Store\n"
        "from ledger.torch.checkpoint.io import write_tensors\n"
        f"st = Store.init({str(tmp_path / 'ledger')!r})\n"
        f"write_tensors(st.objects, [('a', torch.randn({N}))])\n"
        "write_tensors(st.objects, [('b', torch.arange(4.0))])  # 'a' is retired\n"
        "import threading\n"
        "print(sorted(t.name for t in threading.enumerate()))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "ledger-unmap" in proc.stdout  # the thread was started, and did not hold the exit


@on_linux
def test_on_linux_chunks_are_compared_not_hashed(store: Store) -> None:
    # Not skipped where memcmp is missing: on Linux it never is, and a save that can no
    # longer compare would otherwise skip every test of reuse and pass.
    t = [("t", torch.randn(N))]
    write_tensors(store.objects, t)
    assert _reused(store, t) == N * 4


@on_linux
def test_the_budget_is_a_quarter_of_the_memory_the_process_may_use() -> None:
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    for limit in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit).read_text().strip()
        except OSError:
            continue
        if text.isdigit():  # "max": no limit
            total = min(total, int(text))
    assert ckpt_reuse.BUDGET * 4 <= total < (ckpt_reuse.BUDGET + 1) * 4
