"""The cold digest's read-ahead: the kernel is told which files the readers take next, in
their order, never more than a window of files ahead of them, never a file too large for a
hint; a hint changes no digest, and an error stops the hints with the readers."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import blake3
import pytest

from ledger.capture import data
from ledger.capture.data import digest_input, manifest_data
from ledger.capture.statcache import StatCache
from ledger.errors import UsageError

pytestmark = pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="no posix_fadvise")


class Hints:
    """Stands in for posix_fadvise: which file each WILLNEED hint named, and how many files
    the readers had finished when it came."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, delay: float = 0.0) -> None:
        self.paths: list[str] = []
        self.finished = 0
        self.ahead: list[int] = []  # per hint: files hinted (this one included) - finished
        self._lock = threading.Lock()
        real_hash = data._hash_one

        def hash_one(abspath: str, cache: StatCache) -> tuple[str, os.stat_result]:
            if delay:
                time.sleep(delay)
            out = real_hash(abspath, cache)
            with self._lock:
                self.finished += 1
            return out

        def fadvise(fd: int, offset: int, length: int, advice: int) -> None:
            assert (offset, length, advice) == (0, 0, os.POSIX_FADV_WILLNEED)
            with self._lock:
                self.paths.append(os.readlink(f"/proc/self/fd/{fd}"))
                self.ahead.append(len(self.paths) - self.finished)

        monkeypatch.setattr(data, "_hash_one", hash_one)
        monkeypatch.setattr(data, "_fadvise", fadvise)


def _tree(root: Path, n: int, size: int = 3000) -> dict[str, bytes]:
    bodies = {}
    for i in range(n):
        rel = f"{i // 50:02d}/{i:04d}.bin"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        bodies[rel] = os.urandom(size + i)
        (root / rel).write_bytes(bodies[rel])
    return bodies


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_a_cold_digest_hints_the_files_it_reads_in_the_order_it_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "data"
    bodies = _tree(root, 200)
    hints = Hints(monkeypatch)
    d = digest_input(root, StatCache(), dvc=False, workers=4)
    listing = manifest_data(d)
    assert listing is not None
    assert {e["path"]: e["digest"] for e in listing["entries"]} == {
        rel: "b3:" + blake3.blake3(b).hexdigest() for rel, b in bodies.items()
    }
    assert hints.paths, "no file was hinted"
    assert len(set(hints.paths)) == len(hints.paths)  # none twice
    order = sorted(str(root / rel) for rel in bodies)
    assert hints.paths == [p for p in order if p in set(hints.paths)]  # the readers' order
    assert not [t for t in threading.enumerate() if t.name == "ledger-readahead"]


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_the_hints_stay_a_window_ahead_of_the_readers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "data"
    _tree(root, 120, size=100)
    monkeypatch.setattr(data, "READAHEAD_FILES", 5)
    hints = Hints(monkeypatch, delay=0.002)  # readers slower than the hints
    digest_input(root, StatCache(), dvc=False, workers=2)
    assert len(hints.paths) > 60  # the hints kept pace over the whole input
    assert max(hints.ahead) <= 5, hints.ahead


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_files_larger_than_the_hint_size_are_not_hinted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "data"
    root.mkdir()
    for i in range(40):
        (root / f"{i:02d}").write_bytes(os.urandom(200 if i % 2 else 50))
    monkeypatch.setattr(data, "READAHEAD_MAX_SIZE", 100)
    hints = Hints(monkeypatch, delay=0.001)
    digest_input(root, StatCache(), dvc=False, workers=2)
    assert hints.paths
    assert all(os.path.getsize(p) == 50 for p in hints.paths)


def test_a_warm_or_small_digest_starts_no_hints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "data"
    _tree(root, 100)
    cache = StatCache(racy_window_ns=0)
    digest_input(root, cache, dvc=False, workers=4)  # cold: fills the cache
    hints = Hints(monkeypatch)
    cache.trees.clear()  # every file's stat still vouches: nothing to read
    digest_input(root, cache, dvc=False, workers=4)
    digest_input(root / "00", StatCache(), dvc=False, workers=1)  # one reader: no hints
    assert hints.paths == [] and hints.finished == 50


def test_a_read_error_stops_the_readers_and_the_hints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first error ends the digest: the other readers stop at their next file and the
    hint thread is gone when the error reaches the caller."""
    root = tmp_path / "data"
    _tree(root, 400, size=10)
    hints = Hints(monkeypatch)
    inner = data._hash_one

    def fail_at_the_fifth(abspath: str, cache: StatCache) -> tuple[str, os.stat_result]:
        if abspath.endswith("0004.bin"):
            raise UsageError(f"cannot read input file {abspath}: Input/output error")
        time.sleep(0.002)
        return inner(abspath, cache)

    monkeypatch.setattr(data, "_hash_one", fail_at_the_fifth)
    with pytest.raises(UsageError, match=r"0004\.bin: Input/output error"):
        digest_input(root, StatCache(), dvc=False, workers=4)
    assert hints.finished < 100  # the others stopped: not all 400 were read
    assert not [t for t in threading.enumerate() if t.name == "ledger-readahead"]
