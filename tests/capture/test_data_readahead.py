"""The cold digest's readers: small files are read by one thread (a second one costs more in
GIL hand-offs than it gives), large ones by several; each reader opens the next files of its
share a bounded window ahead and tells the kernel it will read them, in its reading order,
never a file too large for a hint. A hint changes no digest; an error stops every reader, and
no descriptor outlives the digest."""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import blake3
import pytest

from ledger.capture import data
from ledger.capture.data import digest_input, manifest_data
from ledger.capture.statcache import StatCache
from ledger.errors import UsageError

pytestmark = pytest.mark.skipif(not hasattr(os, "posix_fadvise"), reason="no posix_fadvise")
needs_proc = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")


class Readers:
    """Stands in for posix_fadvise and spies on the readers: which file each WILLNEED hint
    named, how many files were read when it came, and which threads read."""

    def __init__(
        self, monkeypatch: pytest.MonkeyPatch, delay: float = 0.0, together: int = 0
    ) -> None:
        """``together``: each reader's first read waits until that many readers are reading,
        so a pool that reuses a thread which finished its share early (its main thread held
        up between two submits, on a loaded machine) cannot hide a reader."""
        self.hinted: list[str] = []
        self.read: list[str] = []
        self.ahead: list[int] = []  # per hint: files hinted (this one included) - files read
        self.threads: set[int] = set()
        self._lock = threading.Lock()
        real = data._hash_open
        started = threading.Barrier(together) if together else None

        def hash_open(abspath: str, fd: int, cache: StatCache) -> tuple[str, os.stat_result]:
            if started is not None and threading.get_ident() not in self.threads:
                started.wait(timeout=60)  # broken (the test fails) if fewer readers come
            if delay:
                time.sleep(delay)
            out = real(abspath, fd, cache)
            with self._lock:
                self.read.append(abspath)
                self.threads.add(threading.get_ident())
            return out

        def fadvise(fd: int, offset: int, length: int, advice: int) -> None:
            assert (offset, length, advice) == (0, 0, os.POSIX_FADV_WILLNEED)
            with self._lock:
                self.hinted.append(os.readlink(f"/proc/self/fd/{fd}"))
                self.ahead.append(len(self.hinted) - len(self.read))

        monkeypatch.setattr(data, "_hash_open", hash_open)
        monkeypatch.setattr(data, "_fadvise", fadvise)


def _tree(root: Path, n: int, size: int = 3000) -> dict[str, bytes]:
    bodies = {}
    for i in range(n):
        rel = f"{i // 50:02d}/{i:04d}.bin"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        bodies[rel] = os.urandom(size + i)
        (root / rel).write_bytes(bodies[rel])
    return bodies


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def _listed(root: Path) -> dict[str, str]:
    listing = manifest_data(digest_input(root, StatCache(), dvc=False, workers=1))
    assert listing is not None
    return {e["path"]: e["digest"] for e in listing["entries"]}


class RefusingOpen:
    """``os.open`` that raises ``OSError(errno)`` for the paths ``refuse`` names (it returns
    the errno, or 0 to open as usual); ``refused`` lists them. Used as a context manager, so
    the real ``os.open`` is back before the test looks at descriptors."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, refuse: Callable[[str], int]) -> None:
        self.refused: list[str] = []
        self._mp, self._refuse, self._real = monkeypatch, refuse, os.open

    def _open(self, path: str, flags: int, *a: object) -> int:
        code = self._refuse(str(path))
        if code:
            self.refused.append(str(path))
            raise OSError(code, os.strerror(code), path)
        return self._real(path, flags, *a)

    def __enter__(self) -> RefusingOpen:
        self._mp.setattr(os, "open", self._open)
        return self

    def __exit__(self, *exc: object) -> None:
        self._mp.setattr(os, "open", self._real)


@needs_proc
def test_small_files_are_read_by_one_reader_that_hints_each_before_reading_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "data"
    bodies = _tree(root, 200)
    spy = Readers(monkeypatch)
    before = _open_fds()
    d = digest_input(root, StatCache(), dvc=False, workers=4)
    listing = manifest_data(d)
    assert listing is not None
    assert {e["path"]: e["digest"] for e in listing["entries"]} == {
        rel: "b3:" + blake3.blake3(b).hexdigest() for rel, b in bodies.items()
    }
    assert len(spy.threads) == 1  # four allowed, one used: the files are small
    order = sorted(str(root / rel) for rel in bodies)
    assert spy.read == order
    assert spy.hinted == order  # every file, once, in the reader's order
    assert _open_fds() == before


@needs_proc
def test_large_files_are_read_by_every_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "data"
    _tree(root, 120, size=2000)
    monkeypatch.setattr(data, "SMALL_FILES", 1000)  # these files count as large
    spy = Readers(monkeypatch, delay=0.002, together=3)
    digest_input(root, StatCache(), dvc=False, workers=3)
    assert len(spy.threads) == 3
    # Each reader hints its own share in its own order: the hints of one share are in order.
    for w in range(3):
        share = sorted(spy.read)[w::3]
        assert [p for p in spy.hinted if p in set(share)] == share


@needs_proc
@pytest.mark.parametrize("window", [2, 5])
def test_the_hints_stay_a_window_ahead_of_the_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    """Two is the smallest window that opens a file ahead, and so hints."""
    root = tmp_path / "data"
    _tree(root, 120, size=100)
    monkeypatch.setattr(data, "READAHEAD_FILES", window)
    spy = Readers(monkeypatch)
    digest_input(root, StatCache(), dvc=False, workers=2)
    assert len(spy.hinted) == 120
    assert max(spy.ahead) == window, spy.ahead


def test_the_window_leaves_most_descriptors_to_the_rest_of_the_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
        assert data._window(1) == 8
        assert data._window(2) == 4
        assert data._window(16) == 1  # no file ahead: one open at a time, no hint
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert data._window(1) == min(data.READAHEAD_FILES, soft // 8)
    monkeypatch.setattr(data, "_fadvise", None)
    assert data._window(1) == 1  # no hints: nothing to open ahead for


def test_no_descriptor_limit_gives_the_whole_window(monkeypatch: pytest.MonkeyPatch) -> None:
    import resource

    unlimited = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
    monkeypatch.setattr(resource, "getrlimit", lambda which: unlimited)
    assert data._window(1) == data.READAHEAD_FILES
    assert data._window(4) == data.READAHEAD_FILES // 4


@needs_proc
def test_a_digest_at_the_descriptor_limit_reads_what_it_has_open_then_opens_more(
    tmp_path: Path,
) -> None:
    """The process has three descriptors left and the window would open eight files ahead:
    the reader reads what it opened, and opens the next file once a descriptor is free."""
    import resource

    root = tmp_path / "data"
    _tree(root, 30)
    want = _listed(root)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = max(64, len(_open_fds()) + 16)
    spare: list[int] = []
    got: list[object] = []

    def digest() -> None:
        try:
            got.append(manifest_data(digest_input(root, StatCache(), dvc=False, workers=1)))
        except BaseException as e:
            got.append(e)

    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    try:
        while True:
            try:
                spare.append(os.open(os.devnull, os.O_RDONLY))
            except OSError as e:
                assert e.errno == errno.EMFILE
                break
        for _ in range(3):
            os.close(spare.pop())
        assert data._window(1) > 3
        t = threading.Thread(target=digest, daemon=True)
        t.start()
        t.join(60)
        stuck = t.is_alive()  # looked at before any descriptor is given back
    finally:
        for fd in spare:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert not stuck, "the reader kept retrying an open that could not succeed"
    assert len(got) == 1 and isinstance(got[0], dict), got
    assert {e["path"]: e["digest"] for e in got[0]["entries"]} == want


@needs_proc
def test_running_out_of_descriptors_while_opening_ahead_is_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EMFILE on a file opened ahead: the reader reads what it has open and tries again."""
    root = tmp_path / "data"
    _tree(root, 40)
    want = _listed(root)

    def once(path: str) -> int:
        named = path.endswith(("0007.bin", "0020.bin"))
        return errno.EMFILE if named and path not in refusing.refused else 0

    before = _open_fds()
    with RefusingOpen(monkeypatch, once) as refusing:
        got = manifest_data(digest_input(root, StatCache(), dvc=False, workers=1))
    assert len(refusing.refused) == 2
    assert got is not None and {e["path"]: e["digest"] for e in got["entries"]} == want
    assert _open_fds() == before


def test_out_of_descriptors_with_nothing_open_is_the_error_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "data"
    _tree(root, 10)

    def every_input(path: str) -> int:
        return errno.EMFILE if path.startswith(str(root)) and path.endswith(".bin") else 0

    with (
        RefusingOpen(monkeypatch, every_input),
        pytest.raises(UsageError, match=r"cannot open input file .*0000\.bin: Too many open"),
    ):
        digest_input(root, StatCache(), dvc=False, workers=1)


@needs_proc
def test_files_larger_than_the_hint_size_are_read_but_not_hinted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "data"
    root.mkdir()
    for i in range(40):
        (root / f"{i:02d}").write_bytes(os.urandom((50, 100, 200)[i % 3]))
    monkeypatch.setattr(data, "READAHEAD_MAX_SIZE", 100)
    spy = Readers(monkeypatch)
    digest_input(root, StatCache(), dvc=False, workers=2)
    assert len(spy.read) == 40
    # Files of READAHEAD_MAX_SIZE bytes exactly are hinted; only larger ones are not.
    assert sorted(os.path.getsize(p) for p in spy.hinted) == [50] * 14 + [100] * 13


def test_a_warm_digest_or_a_single_file_to_read_gives_no_hints_two_files_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "data"
    _tree(root, 100)
    cache = StatCache(racy_window_ns=0)
    digest_input(root, cache, dvc=False, workers=4)  # cold: fills the cache
    spy = Readers(monkeypatch)
    cache.trees.clear()  # every file's stat still vouches: nothing to read
    digest_input(root, cache, dvc=False, workers=4)
    assert spy.read == [] and spy.hinted == []
    (root / "00" / "0003.bin").write_bytes(b"changed")
    cache.trees.clear()
    digest_input(root, cache, dvc=False, workers=4)  # one file to read: nothing to hint ahead
    assert len(spy.read) == 1 and spy.hinted == []
    for rel in ("00/0005.bin", "01/0070.bin"):
        (root / rel).write_bytes(b"changed too")
    cache.trees.clear()
    digest_input(root, cache, dvc=False, workers=4)  # two: the second is opened ahead
    assert len(spy.read) == 3
    assert sorted(spy.hinted) == [str(root / "00/0005.bin"), str(root / "01/0070.bin")]


@needs_proc
@pytest.mark.parametrize("workers", [1, 4])
def test_a_read_error_stops_the_readers_and_closes_every_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """The first error ends the digest: the other readers stop at their next file, and the
    files they had opened ahead are closed when the error reaches the caller."""
    root = tmp_path / "data"
    _tree(root, 400, size=10)
    monkeypatch.setattr(data, "SMALL_FILES", 1)  # four readers when asked for four
    spy = Readers(monkeypatch)
    inner = data._hash_open

    def fail_at_the_fifth(abspath: str, fd: int, cache: StatCache) -> tuple[str, os.stat_result]:
        if abspath.endswith("0004.bin"):
            raise UsageError(f"cannot read input file {abspath}: Input/output error")
        time.sleep(0.002)
        return inner(abspath, fd, cache)

    monkeypatch.setattr(data, "_hash_open", fail_at_the_fifth)
    before = _open_fds()
    with pytest.raises(UsageError, match=r"0004\.bin: Input/output error"):
        digest_input(root, StatCache(), dvc=False, workers=workers)
    assert len(spy.read) < 100  # the others stopped: not all 400 were read
    assert _open_fds() == before


@needs_proc
def test_an_unreadable_file_ahead_of_the_reader_names_itself_and_leaks_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "data"
    _tree(root, 60)

    def unreadable(path: str) -> int:  # as chmod 0 does for anyone but root
        return errno.EACCES if path.endswith("0010.bin") else 0

    before = _open_fds()
    with (
        RefusingOpen(monkeypatch, unreadable),
        pytest.raises(UsageError, match=r"0010\.bin: permission denied") as e,
    ):
        digest_input(root, StatCache(), dvc=False, workers=1)
    assert e.value.hint == "make it readable, or leave it out of --input"
    assert _open_fds() == before


def test_a_fifo_put_where_the_walk_saw_a_file_is_refused_not_waited_on(tmp_path: Path) -> None:
    """Between the walk and the read a file is replaced by a FIFO with no writer: opening it
    must not block the digest forever, and its bytes are nobody's input."""
    root = tmp_path / "data"
    _tree(root, 30)
    base = str(root) + "/"
    items, _ = data._walk(str(root), base)
    victim = root / "00" / "0012.bin"
    victim.unlink()
    os.mkfifo(victim)
    done: list[BaseException] = []

    def fill() -> None:
        try:
            data._fill(items, base, StatCache(), 1)
        except BaseException as e:
            done.append(e)

    t = threading.Thread(target=fill, daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive(), "the digest waited on the FIFO"
    assert len(done) == 1 and isinstance(done[0], UsageError)
    assert "0012.bin is not a regular file" in str(done[0])


def test_the_reader_count_follows_the_files_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    small, large = [40_000] * 100, [4 << 20] * 100
    assert data._readers(small, 4) == 1
    assert data._readers(large, 4) == 4
    assert data._readers(large[:7], 4) == 1  # fewer than two files a reader
    assert data._readers(large[:8], 4) == 4  # two files a reader: every reader
    assert data._readers([data.SMALL_FILES] * 8, 2) == 2  # a mean of exactly SMALL_FILES: large
    assert data._readers(large, 1) == 1
    mixed = [40_000] * 90 + [4 << 20] * 10  # mean 0.4 MiB: large
    assert data._readers(mixed, 2) == 2
    monkeypatch.setattr(data, "_fadvise", None)  # no hints: threads overlap the disk's waits
    assert data._readers(small, 8) == 8
