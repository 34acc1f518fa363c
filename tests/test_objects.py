"""The object store: round trips, codec choice, streaming, corruption, concurrency, crashes."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from multiprocessing import get_context
from pathlib import Path

import pytest
from _support import subprocess_env
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger._hashing import hash_bytes
from ledger.errors import CorruptObjectError, MissingObjectError
from ledger.store import Store
from ledger.store.objects import CODEC_RAW_ALIGNED, CODEC_ZSTD, compression_pays
from ledger.store.verify import verify_store


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=5000))
def test_put_get_round_trip(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    store = Store.init(tmp_path_factory.mktemp("s") / ".ledger")
    oid = store.objects.put_bytes(data)
    assert oid == hash_bytes(data)
    assert store.objects.get_bytes(oid) == data
    # The streaming path yields the same id and content.
    assert store.objects.put_stream(io.BytesIO(data)) == oid
    store.objects.verify(oid)


def _codec(store: Store, oid: str) -> int:
    return store.objects.path_of(oid).read_bytes()[0]


def test_compression_only_when_it_pays(store: Store) -> None:
    text = b"epoch 1 loss 0.25\n" * 10_000
    noise = os.urandom(200_000)
    t, n = store.objects.put_bytes(text), store.objects.put_bytes(noise)
    assert _codec(store, t) == CODEC_ZSTD
    assert store.objects.size_on_disk(t) < len(text) // 10
    assert _codec(store, n) == CODEC_RAW_ALIGNED  # raw, and over 64 KiB
    ts = store.objects.put_stream(io.BytesIO(text * 20))
    ns = store.objects.put_stream(io.BytesIO(os.urandom(3 << 20)))
    assert _codec(store, ts) == CODEC_ZSTD and _codec(store, ns) == CODEC_RAW_ALIGNED
    assert store.objects.get_bytes(ts) == text * 20


def test_float_weights_are_stored_raw(store: Store) -> None:
    import numpy as np

    weights = np.random.default_rng(0).standard_normal(250_000).astype(np.float32).tobytes()
    oid = store.objects.put_bytes(weights)
    assert _codec(store, oid) == CODEC_RAW_ALIGNED


def test_streaming_put_of_a_large_file(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "big.bin"
    with open(path, "wb") as f:
        for i in range(24):
            f.write(os.urandom(1 << 20) if i % 2 else bytes([i]) * (1 << 20))
    oid = store.objects.put_file(path)
    out = io.BytesIO()
    assert store.objects.copy_to(oid, out) == path.stat().st_size
    assert hash_bytes(out.getvalue()) == oid


def test_put_is_idempotent_and_write_once(store: Store) -> None:
    oid = store.objects.put_bytes(b"same")
    path = store.objects.path_of(oid)
    os.utime(path, (1_000_000, 1_000_000))  # an old object
    inode = path.stat().st_ino
    assert store.objects.put_bytes(b"same") == oid
    # The file is not rewritten, but its mtime says "reused now": gc's grace counts from here.
    assert path.stat().st_ino == inode and path.read_bytes()[1:] == b"same"
    assert time.time() - path.stat().st_mtime < 60
    assert not os.access(path, os.W_OK) or os.geteuid() == 0
    assert oct(path.stat().st_mode & 0o777) == oct(0o444)


def test_put_bytes_new_says_whether_it_stored(store: Store) -> None:
    import numpy as np

    text = b"step 1 loss 0.5\n" * 5000
    oid, new = store.objects.put_bytes_new(text)
    assert (oid, new) == (hash_bytes(text), True)
    assert store.objects.put_bytes_new(text) == (oid, False)
    assert store.objects.put_bytes(text) == oid
    assert _codec(store, oid) == CODEC_ZSTD
    # A memoryview (tensor bytes) is stored as its bytes, and a slice of one as that slice.
    weights = np.arange(300_000, dtype=np.float32)
    view = weights.data.cast("B")
    part = view[4096 : 4096 + 65536]
    w_oid, w_new = store.objects.put_bytes_new(view)
    p_oid, p_new = store.objects.put_bytes_new(part, compress=False)
    assert w_new and p_new and w_oid != p_oid
    assert store.objects.get_bytes(w_oid) == weights.tobytes()
    assert store.objects.get_bytes(p_oid) == weights.tobytes()[4096 : 4096 + 65536]
    assert _codec(store, p_oid) == CODEC_RAW_ALIGNED
    assert not any(store.tmp_dir.iterdir())  # no temp file left behind
    # The codec rule is public, so a writer may judge its own (smaller) sample.
    assert compression_pays(text[:4096]) and not compression_pays(os.urandom(4096))
    assert not compression_pays(b"a" * 63)  # too small to be worth a frame
    forced, _ = store.objects.put_bytes_new(b"b" * 1000, compress=True)
    assert _codec(store, forced) == CODEC_ZSTD


def test_missing_and_corrupt_objects_raise(store: Store) -> None:
    oid = store.objects.put_bytes(b"payload" * 100)
    path = store.objects.path_of(oid)
    path.chmod(0o644)
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(CorruptObjectError):
        store.objects.get_bytes(oid)
    path.unlink()
    with pytest.raises(MissingObjectError):
        store.objects.get_bytes(oid)


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete", "codec"])
def test_verify_reports_every_damaged_object(store: Store, damage: str) -> None:
    oids = [store.objects.put_bytes(os.urandom(100) + bytes([i]) * 500) for i in range(20)]
    tree = store.put_json({"kind": "tree", "schema": 1, "links": oids})
    store.set_ref("notes/r1", tree)
    assert verify_store(store).ok
    for victim in oids[3], oids[11]:
        path = store.objects.path_of(victim)
        path.chmod(0o644)
        raw = bytearray(path.read_bytes())
        if damage == "flip":
            raw[len(raw) // 2] ^= 0x01
            path.write_bytes(bytes(raw))
        elif damage == "truncate":
            path.write_bytes(bytes(raw[:-7]))
        elif damage == "codec":
            path.write_bytes(b"\x07" + bytes(raw[1:]))
        else:
            path.unlink()
    report = verify_store(store)
    assert not report.ok
    named = {p.subject for p in report.problems}
    assert {oids[3], oids[11]} <= named
    kinds = {p.kind for p in report.problems}
    assert kinds == ({"missing-object"} if damage == "delete" else {"corrupt-object"})


def _writer(root: str, seed: int) -> list[str]:
    store = Store.open(root)
    out = []
    for i in range(40):
        # Half the objects are shared by every writer, half are this writer's own.
        data = f"shared {i}".encode() * 300 if i % 2 else f"own {seed} {i}".encode() * 300
        out.append(store.objects.put_bytes(data))
        out.append(store.objects.put_stream(io.BytesIO(data + b"s")))
    return out


def test_concurrent_writers(store: Store) -> None:
    with get_context("spawn").Pool(4) as pool:
        results = pool.starmap(_writer, [(str(store.root), s) for s in range(4)])
    every = {oid for r in results for oid in r}
    assert len(every) == 4 * 40 + 40  # own (20 per writer, x2 paths) + shared (20, x2 paths)
    assert verify_store(store).ok
    assert list(store.tmp_dir.iterdir()) == []


SLOW_PUT = """
import sys, time
from ledger.store import Store
class Slow:
    def __init__(self): self.n = 0
    def read(self, k=-1):
        self.n += 1
        if self.n == 3:
            print("writing", flush=True)
        if self.n > 2000: return b""
        time.sleep(0.002)
        return bytes([self.n % 251]) * 65536
Store.open(sys.argv[1]).objects.put_stream(Slow())
"""


def test_sigkill_during_put_leaves_no_partial_object(store: Store) -> None:
    for delay in (0.05, 0.2, 0.5):
        proc = subprocess.Popen(
            [sys.executable, "-c", SLOW_PUT, str(store.root)],
            env=subprocess_env(),
            stdout=subprocess.PIPE,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"writing"
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        assert list(store.objects) == []
        report = verify_store(store)
        assert report.ok and report.objects == 0


def test_copy_to_real_files_and_buffers(store: Store, tmp_path: Path) -> None:
    raw = store.objects.put_bytes(os.urandom(3 << 20))  # raw: copied with sendfile
    packed = store.objects.put_bytes(b"abc" * 100_000)  # zstd: decompressed through Python
    for oid in (raw, packed):
        content = store.objects.get_bytes(oid)
        target = tmp_path / "out.bin"
        with open(target, "wb") as f:
            f.write(b"header")  # the copy starts at the file's current position
            assert store.objects.copy_to(oid, f) == len(content)
            f.write(b"trailer")
        assert target.read_bytes() == b"header" + content + b"trailer"
        buf = io.BytesIO()
        store.objects.copy_to(oid, buf)
        assert buf.getvalue() == content


@pytest.mark.parametrize("size", [10, 3 << 20])
@pytest.mark.parametrize("compressible", [True, False])
def test_a_stream_expected_under_another_id_is_never_published(
    store: Store, size: int, compressible: bool
) -> None:
    data = (b"a" * size) if compressible else os.urandom(size)
    wrong = hash_bytes(data + b"!")
    with pytest.raises(CorruptObjectError) as e:
        store.objects.put_stream(io.BytesIO(data), expect=wrong)
    assert e.value.oid == wrong
    assert not store.objects.has(wrong) and not store.objects.has(hash_bytes(data))
    assert [p for p in store.tmp_dir.iterdir() if p.name.startswith("obj-")] == []
    assert store.objects.put_stream(io.BytesIO(data), expect=hash_bytes(data)) == hash_bytes(data)
    assert store.objects.get_bytes(hash_bytes(data)) == data
    # Content already stored is still refused under another id (no shortcut skips the check).
    with pytest.raises(CorruptObjectError):
        store.objects.put_stream(io.BytesIO(data), expect=wrong)
    assert not store.objects.has(wrong)


def test_put_file_of_stored_content_writes_nothing(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small file whose object is already stored (an empty log, a replay printing the same)
    is hashed first: no temp file is written and fsynced only to be dropped."""
    log = tmp_path / "stderr.log"
    log.write_bytes(b"")
    first = store.objects.put_file(log)
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    assert store.objects.put_file(log) == first
    assert synced == []
    assert list(store.objects.tmp_dir.iterdir()) == []
    log.write_bytes(b"new content\n")  # new content is still stored durably
    oid = store.objects.put_file(log)
    assert synced and store.objects.get_bytes(oid) == b"new content\n"


class _Trickle(io.RawIOBase):
    """A stream that returns at most 3 bytes a read, as a pipe may."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        k = 3 if n < 0 else min(3, n)
        out, self.data = self.data[:k], self.data[k:]
        return out


def test_put_stream_with_short_reads_stores_all_of_it(store: Store) -> None:
    data = b"0123456789abcdef"
    oid = store.objects.put_stream(_Trickle(data))  # type: ignore[arg-type]
    assert oid == hash_bytes(data)
    assert store.objects.get_bytes(oid) == data


def test_delete_removes_the_object_and_a_second_delete_is_quiet(store: Store) -> None:
    oid = store.objects.put_bytes(b"to be swept")
    store.objects.delete(oid)
    assert not store.objects.has(oid) and list(store.objects) == []
    store.objects.delete(oid)  # already gone: nothing to do


def test_touch_in_a_read_only_ledger_says_whether_the_object_is_there(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another user's objects cannot be touched (EPERM): touch then answers like ``has``."""
    oid = store.objects.put_bytes(b"someone else's object")

    def refuse(*_args: object) -> None:
        raise PermissionError("read-only")

    monkeypatch.setattr(os, "utime", refuse)
    assert store.objects.touch(oid) is True
    assert store.objects.touch(hash_bytes(b"absent")) is False
