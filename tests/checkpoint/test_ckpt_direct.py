"""Large chunks that changed since the last save are written with O_DIRECT
(``checkpoint.write._write_direct``): their whole blocks through an aligned buffer, piece by
piece, the last partial block through the page cache (never padded and cut). The object
file must hold exactly the header (``objects.header_for``: the codec byte, and for raw chunks
of ``ALIGN_MIN`` bytes or more zeros to 4096) and the payload at every size
around the piece and block boundaries and the aligned threshold, raw or compressed, with both
kinds of temp file; a file system that refuses O_DIRECT (a refusal to turn it on, or at the
first write) gets buffered writes, remembered per folder; a write that fails midway leaves
nothing; and in real saves only a chunk that changed at two saves in a row goes this way (a
chunk saved for the first time, or changed once after a save that found it the same, goes
through the page cache, for the next save to compare with), and every checkpoint loads back
bitwise.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from ledger._hashing import hash_bytes
from ledger.store import Store
from ledger.store.objects import ALIGN_MIN, header_for

torch = pytest.importorskip("torch")

from ledger.torch.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from ledger.torch.checkpoint import write as ckpt_write  # noqa: E402
from ledger.torch.checkpoint.write import ChunkWriter  # noqa: E402

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(not getattr(os, "O_DIRECT", 0), reason="no O_DIRECT on this platform"),
]

PIECE = 8192  # two 4 KiB blocks: small payloads cross several pieces


@pytest.fixture()
def small_pieces(monkeypatch: Any) -> list[bool]:
    """Every payload goes the O_DIRECT way, in 8 KiB pieces; what each call returned."""
    monkeypatch.setattr(ckpt_write, "DIRECT_MIN", 1)
    monkeypatch.setattr(ckpt_write, "_PIECE", PIECE)
    monkeypatch.setattr(ckpt_write, "_buffers", ckpt_write._Buffers())
    monkeypatch.setattr(ckpt_write, "_direct_refused", set())
    used: list[bool] = []
    real = ckpt_write._write_direct

    def spy(fd: int, codec: int, payload: Any) -> bool:
        used.append(real(fd, codec, payload))
        return used[-1]

    monkeypatch.setattr(ckpt_write, "_write_direct", spy)
    return used


@pytest.fixture(params=["unnamed", "named"])
def temp_kind(request: Any, monkeypatch: Any) -> str:
    if request.param == "named":
        monkeypatch.setattr(ckpt_write, "open_unnamed", lambda dir, mode=0o444: None)
    return str(request.param)


def _direct_works(folder: Path) -> bool:
    try:
        fd = os.open(folder / ".probe-direct", os.O_CREAT | os.O_WRONLY | os.O_DIRECT, 0o600)
    except OSError:
        return False
    os.close(fd)
    (folder / ".probe-direct").unlink()
    return True


def _put_all(store: Store, payloads: list[bytes], compress: bool) -> list[str]:
    writer = ChunkWriter(store.objects)
    oids = [writer.put(memoryview(p), compress, direct=True)[0] for p in payloads]
    writer.finish()
    return oids


SIZES = [1, 4094, 4095, 4096, 8191, 8192, 8193, 3 * PIECE + 5, 5 * PIECE - 1]
SIZES += [ALIGN_MIN - 1, ALIGN_MIN, ALIGN_MIN + PIECE - 4096, ALIGN_MIN + PIECE + 3]


def test_object_files_hold_exactly_the_header_and_the_payload(
    store: Store, small_pieces: list[bool], temp_kind: str
) -> None:
    if not _direct_works(store.objects.tmp_dir):
        pytest.skip("this file system refuses O_DIRECT")
    rng = __import__("random").Random(5)
    payloads = [rng.randbytes(n) for n in SIZES]
    oids = _put_all(store, payloads, compress=False)
    assert small_pieces == [True] * len(SIZES)
    for oid, p in zip(oids, payloads, strict=True):
        assert oid == hash_bytes(p)
        assert store.objects.path_of(oid).read_bytes() == header_for(len(p), compressed=False) + p
        assert store.objects.get_bytes(oid) == p
    assert os.listdir(store.objects.tmp_dir) == []


def test_compressed_payloads_go_the_same_way(store: Store, small_pieces: list[bool]) -> None:
    if not _direct_works(store.objects.tmp_dir):
        pytest.skip("this file system refuses O_DIRECT")
    payloads = [bytes(n) + b"tail" for n in (PIECE * 4, PIECE * 40 + 3)]
    oids = _put_all(store, payloads, compress=True)
    assert small_pieces == [True, True]
    for oid, p in zip(oids, payloads, strict=True):
        assert store.objects.path_of(oid).read_bytes()[:1] == b"\x01"
        assert store.objects.get_bytes(oid) == p


def test_a_file_system_that_refuses_o_direct_gets_buffered_writes(
    store: Store, small_pieces: list[bool], monkeypatch: Any
) -> None:
    # Linux refuses to turn O_DIRECT on (fcntl: EINVAL) where the file system has no direct
    # I/O (tmpfs before Linux 6.6, some FUSE and network file systems).
    real = ckpt_write.fcntl.fcntl

    def fcntl(fd: int, cmd: int, arg: int = 0) -> int:
        if cmd == ckpt_write.fcntl.F_SETFL and arg & os.O_DIRECT:
            raise OSError(errno.EINVAL, "Invalid argument")
        return real(fd, cmd, arg)

    monkeypatch.setattr(ckpt_write.fcntl, "fcntl", fcntl)
    # One syncer: several at once may each be refused before the first refusal is remembered.
    monkeypatch.setattr(ckpt_write, "_SYNCERS", 1)
    payloads = [bytes([i]) * (PIECE * 2 + i) for i in range(3)]
    oids = _put_all(store, payloads, compress=False)
    # Refused once, then remembered for the folder: not tried again.
    assert small_pieces == [False]
    assert str(store.objects.tmp_dir) in ckpt_write._direct_refused
    for oid, p in zip(oids, payloads, strict=True):
        assert store.objects.path_of(oid).read_bytes() == header_for(len(p), compressed=False) + p


def test_a_refusal_at_the_first_write_falls_back_with_the_file_emptied(
    store: Store, small_pieces: list[bool], monkeypatch: Any
) -> None:
    real = os.pwrite

    def refuse(fd: int, data: Any, offset: int) -> int:
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(os, "pwrite", refuse)
    p = bytes(range(256)) * 100
    (oid,) = _put_all(store, [p], compress=False)
    monkeypatch.setattr(os, "pwrite", real)
    assert small_pieces == [False]
    assert str(store.objects.tmp_dir) in ckpt_write._direct_refused
    assert store.objects.path_of(oid).read_bytes() == header_for(len(p), compressed=False) + p


@pytest.mark.parametrize(
    ("fail_at", "error"),
    [
        (2, OSError(errno.ENOSPC, "No space left on device")),  # a later piece: not a refusal
        (1, OSError(errno.EIO, "Input/output error")),
    ],
)
def test_a_direct_write_that_fails_midway_leaves_nothing(
    store: Store,
    small_pieces: list[bool],
    temp_kind: str,
    monkeypatch: Any,
    fail_at: int,
    error: OSError,
) -> None:
    if not _direct_works(store.objects.tmp_dir):
        pytest.skip("this file system refuses O_DIRECT")
    real = os.pwrite
    calls = [0]

    def pwrite(fd: int, data: Any, offset: int) -> int:
        calls[0] += 1
        if calls[0] == fail_at:
            raise error
        return real(fd, data, offset)

    fds = set(os.listdir("/proc/self/fd"))
    p = b"q" * (PIECE * 3)
    writer = ChunkWriter(store.objects)
    with monkeypatch.context() as m:
        m.setattr(os, "pwrite", pwrite)
        # A syncer writes it: ``put`` queues the object, ``finish`` raises the error.
        writer.put(memoryview(p), False, direct=True)
        with pytest.raises(OSError, match=error.strerror or ""):
            writer.finish()
    assert calls[0] == fail_at
    assert not store.objects.has(hash_bytes(p))
    assert os.listdir(store.objects.tmp_dir) == []
    assert set(os.listdir("/proc/self/fd")) == fds
    assert str(store.objects.tmp_dir) not in ckpt_write._direct_refused
    # The buffer went back to the pool, and the next write is whole.
    assert len(ckpt_write._buffers._free) == 1
    (oid,) = _put_all(store, [p], compress=False)
    assert store.objects.path_of(oid).read_bytes() == header_for(len(p), compressed=False) + p


def test_a_short_write_is_an_error_not_a_hole(
    store: Store, small_pieces: list[bool], monkeypatch: Any
) -> None:
    if not _direct_works(store.objects.tmp_dir):
        pytest.skip("this file system refuses O_DIRECT")
    monkeypatch.setattr(os, "pwrite", lambda fd, data, off: 100)  # the device took 100 bytes
    writer = ChunkWriter(store.objects)
    writer.put(memoryview(b"s" * PIECE * 2), False, direct=True)
    with pytest.raises(OSError, match="short O_DIRECT write: 100 of 8192 bytes"):
        writer.finish()
    assert os.listdir(store.objects.tmp_dir) == []


def _spy_direct(monkeypatch: Any) -> list[tuple[int, bool]]:
    """(payload size, O_DIRECT taken) of every write that asked for O_DIRECT."""
    used: list[tuple[int, bool]] = []
    real = ckpt_write._write_direct

    def spy(fd: int, codec: int, payload: Any) -> bool:
        used.append((len(payload), real(fd, codec, payload)))
        return used[-1][1]

    monkeypatch.setattr(ckpt_write, "_write_direct", spy)
    return used


def test_a_chunk_goes_around_the_page_cache_once_it_changed_at_two_saves_in_a_row(
    store: Store, monkeypatch: Any
) -> None:
    # First saved: through the page cache, for the next save to compare with; changed once:
    # through it too; changed again at the next save: O_DIRECT (it will likely change again);
    # unchanged: compared, not written at all.
    used = _spy_direct(monkeypatch)
    g = torch.Generator().manual_seed(3)
    # 2 MiB + 3 floats: a last piece that is not a whole block; one that never changes; and
    # one under DIRECT_MIN.
    mib = ckpt_write.DIRECT_MIN // 4
    assert mib == 1 << 18  # 1 MiB of float32
    state = {
        "moving": torch.randn((1 << 19) + 3, generator=g),
        "frozen": torch.randn(1 << 19, generator=g),
        "small": torch.randn(1000, generator=g),
        "at_min": torch.randn(mib, generator=g),  # exactly DIRECT_MIN bytes: direct
        "under_min": torch.randn(mib - 1, generator=g),  # 4 bytes short: buffered
    }
    moving = ("moving", "small", "at_min", "under_min")
    save_checkpoint({"m": state}, step=1, store=store, run_id="r")
    assert used == []
    sizes = []
    for step in (2, 3, 4):
        for k in moving:
            state[k].add_(1.0)
        info = save_checkpoint({"m": state}, step=step, store=store, run_id="r")
        assert info.bytes_new == sum(state[k].numel() * 4 for k in moving)
        sizes.append(sorted(n for n, _ in used))
        used.clear()
    # Step 2 changed them once: buffered. Steps 3 and 4: the moving tensor and the one of
    # exactly DIRECT_MIN bytes go around the page cache.
    assert sizes == [[], [1 << 20, ((1 << 19) + 3) * 4], [1 << 20, ((1 << 19) + 3) * 4]]
    loaded = load_checkpoint(store=store, run_id="r").state["m"]
    for k, t in state.items():
        assert torch.equal(loaded[k].view(torch.uint8), t.view(torch.uint8)), k
    # The next save compares the moving tensor with the object written around the cache.
    again = save_checkpoint({"m": state}, step=5, store=store, run_id="r")
    assert again.bytes_new == 0
    assert used == []
    # A save that found them unchanged ends the run of changes: the next change is buffered.
    for k in moving:
        state[k].add_(1.0)
    save_checkpoint({"m": state}, step=6, store=store, run_id="r")
    assert used == []


def test_the_save_after_replacing_every_tensor_compares_from_the_page_cache(
    store: Store, monkeypatch: Any
) -> None:
    # Issue #38: each round replaces every tensor and saves, then changes a tenth and saves
    # again. The first save of a round found every chunk changed once after a save that found
    # it the same; writing those around the page cache left the next save comparing the 90%
    # left alone with files it had to read back from the disk (0.18-0.24 s a save where the
    # page cache gives 0.05-0.07 s for 200 MB). Only the tenth changed at two saves in a row
    # may go around the cache; the other nine tenths stay there and compare equal.
    used = _spy_direct(monkeypatch)
    g = torch.Generator().manual_seed(7)
    n, numel = 10, 1 << 19  # 2 MiB each: above DIRECT_MIN

    def new_state() -> dict[str, Any]:
        return {f"w{i}": torch.randn(numel, generator=g) for i in range(n)}

    state = new_state()
    step = [0]

    def save() -> Any:
        step[0] += 1
        return save_checkpoint({"m": state}, step=step[0], store=store, run_id="r")

    save()
    save()  # unchanged: every chunk compared equal
    per_round = []
    for _round in range(3):
        state = new_state()
        save()
        replaced = sorted(s for s, _ in used)
        used.clear()
        state["w0"].add_(1.0)
        info = save()
        assert info.bytes_new == numel * 4
        per_round.append((replaced, sorted(s for s, _ in used)))
        used.clear()
        save()  # unchanged: compared equal
    # No round's replacing save went around the page cache; the changed tenth did.
    assert per_round == [([], [numel * 4])] * 3


def test_the_last_partial_block_goes_through_the_page_cache_and_nothing_is_cut(
    store: Store, small_pieces: list[bool], monkeypatch: Any
) -> None:
    # Padding the last block and cutting the file with ftruncate made the file system read
    # that block back from the disk to zero its end (a synchronous read behind the chunk's
    # own writes): whole blocks go with O_DIRECT, the rest through the page cache, and no
    # file is cut.
    if not _direct_works(store.objects.tmp_dir):
        pytest.skip("this file system refuses O_DIRECT")
    import fcntl

    writes: list[tuple[int, int, bool]] = []  # (offset, length, O_DIRECT on)
    cuts: list[int] = []
    real_pwrite, real_truncate = os.pwrite, os.ftruncate

    def pwrite(fd: int, data: Any, offset: int) -> int:
        direct = bool(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_DIRECT)
        writes.append((offset, len(data), direct))
        return real_pwrite(fd, data, offset)

    def ftruncate(fd: int, size: int) -> None:
        cuts.append(size)
        real_truncate(fd, size)

    p = bytes(range(256)) * 100 + b"xyz"  # 25,603 bytes, header 1: 6 blocks and 1,028 bytes
    with monkeypatch.context() as m:
        m.setattr(os, "pwrite", pwrite)
        m.setattr(os, "ftruncate", ftruncate)
        (oid,) = _put_all(store, [p], compress=False)
    assert small_pieces == [True]
    assert cuts == []
    total = 1 + len(p)
    whole = total - total % 4096
    assert [w for w in writes if w[2]] == [(k * PIECE, PIECE, True) for k in range(3)]
    assert [w for w in writes if not w[2]] == [(whole, total - whole, False)]
    assert store.objects.path_of(oid).read_bytes() == header_for(len(p), compressed=False) + p
