"""How many threads a digest reads cache misses with: IO-bound reads of a cold page cache get
more threads than there are cores, and the digest does not depend on the count."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from ledger.capture import data
from ledger.capture.data import digest_input, read_workers
from ledger.capture.statcache import StatCache


@pytest.mark.parametrize(("cores", "workers"), [(None, 4), (1, 4), (2, 8), (16, 8)])
def test_without_read_ahead_read_workers_outnumber_small_core_counts(
    monkeypatch: pytest.MonkeyPatch, cores: int | None, workers: int
) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    monkeypatch.setattr(data, "_fadvise", None)
    assert read_workers() == workers


@pytest.mark.parametrize(("cores", "workers"), [(None, 2), (1, 2), (2, 2), (6, 6), (16, 8)])
def test_with_read_ahead_a_reader_per_core(
    monkeypatch: pytest.MonkeyPatch, cores: int | None, workers: int
) -> None:
    """The kernel keeps the disk busy with the hinted reads: more readers only add CPU."""
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    monkeypatch.setattr(data, "_fadvise", lambda *a: None)
    assert read_workers() == workers


@pytest.mark.parametrize("read_ahead", [True, False])
def test_the_default_digest_reads_in_read_workers_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_ahead: bool
) -> None:
    """Large files, or small ones where no read-ahead keeps the disk busy: every reader."""
    if not read_ahead:
        monkeypatch.setattr(data, "_fadvise", None)
    root = tmp_path / "data"
    for i in range(200):
        (root / f"{i // 50}").mkdir(parents=True, exist_ok=True)
        (root / f"{i // 50}" / f"{i:03d}.bin").write_bytes(os.urandom(2000))
    seen: set[int] = set()
    real = data._hash_open
    barrier = threading.Barrier(read_workers(), timeout=30)

    def spy(abspath: str, fd: int, cache: StatCache) -> tuple[str, os.stat_result]:
        if threading.get_ident() not in seen:
            seen.add(threading.get_ident())
            barrier.wait()  # every worker holds a file at once: the pool really is that wide
        return real(abspath, fd, cache)

    if read_ahead:
        monkeypatch.setattr(data, "SMALL_FILES", 1000)  # 2 kB files count as large
    monkeypatch.setattr(data, "_hash_open", spy)
    wide = digest_input(root, StatCache(), dvc=False)
    assert len(seen) == read_workers()
    monkeypatch.setattr(data, "_hash_open", real)
    assert digest_input(root, StatCache(), dvc=False, workers=1).digest == wide.digest
