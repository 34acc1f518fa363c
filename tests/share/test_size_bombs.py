"""Size bombs (issue 36, point 11): a package that unpacks to far more than its own size is
refused before anything is unpacked; a remote object larger than the record linking it says
is refused before a byte of it is downloaded."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path
from typing import Any

import pytest
from _s3_server import RemoteUnderTest
from _support import init_ledger, run_ledger
from test_package_import import manifest_of, read_members, with_manifest, write_members

from ledger._canonical import parse_json
from ledger._hashing import hash_bytes
from ledger.store import Store

ZEROS = 96 << 20  # above the 64 MiB every package may unpack to, ~25,000x its packed size


def _zero_bomb(pkg: Path, out: Path) -> None:
    """The package with one more object, ``ZEROS`` bytes of zeros, listed truthfully."""
    members = read_members(pkg)
    zeros = bytes(ZEROS)
    oid = hash_bytes(zeros)
    m = manifest_of(members)
    objects = m["objects"]
    assert isinstance(objects, dict)
    objects[oid] = ZEROS
    m["total_size"] = sum(objects.values())
    members = with_manifest(members, m)
    members.append((tarfile.TarInfo(f"objects/b3/{oid[3:]}"), zeros))
    write_members(out, members)


def test_a_package_unpacking_to_far_more_than_its_size_is_refused_up_front(
    packaged: tuple[Path, str, Path], tmp_path: Path
) -> None:
    _, _, pkg = packaged
    bomb = tmp_path / "bomb.ledgerpkg"
    _zero_bomb(pkg, bomb)
    assert bomb.stat().st_size < (1 << 20)
    review = tmp_path / "review"
    review.mkdir()
    init_ledger(review)
    r = run_ledger("import", str(bomb), cwd=review)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "times its size" in r.stderr and "--max-ratio" in r.stderr, r.stderr
    store = Store.open(review / ".ledger")
    assert list(store.objects) == [] and list(store.tmp_dir.iterdir()) == []
    # The user who trusts it says so: the bound moves, and nothing else is waived.
    r = run_ledger("import", str(bomb), "--max-ratio", "1000000", cwd=review)
    assert "times its size" not in r.stderr, r.stderr


def test_a_package_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "pkg.ledgerpkg"
    os.mkfifo(fifo)
    init_ledger(tmp_path)
    r = run_ledger("import", str(fifo), cwd=tmp_path)
    assert r.returncode == 2 and "not a regular file" in r.stderr, r.stderr


def _sized_blob(ledger: Path) -> tuple[str, int]:
    """A file's content whose size a record states beside its id."""
    store = Store.open(ledger)
    sized: dict[str, int] = {}
    for oid in store.objects:
        data = store.objects.get_bytes(oid)
        if data[:1] != b"{":
            continue
        stack = [parse_json(data)]
        while stack:
            v = stack.pop()
            if isinstance(v, dict):
                is_file = v.get("type", "file") == "file" and isinstance(v.get("size"), int)
                for key in ("digest", "oid"):
                    if is_file and isinstance(v.get(key), str) and store.objects.has(v[key]):
                        sized[v[key]] = v["size"]
                stack.extend(v.values())
            elif isinstance(v, list):
                stack.extend(v)
    return sorted(sized.items())[0]


def test_pull_refuses_a_remote_object_larger_than_its_record_says_before_downloading(
    packaged: tuple[Path, str, Path], tmp_path: Path, remote: RemoteUnderTest
) -> None:
    repo, _, _ = packaged
    r = run_ledger("push", remote.url, cwd=repo)
    assert r.returncode == 0, r.stderr
    oid, size = _sized_blob(repo / ".ledger")
    path = remote.objects()[oid]
    if remote.url.startswith("/"):  # a 3 GiB sparse file: nothing on disk, all of it to read
        Path(path).chmod(0o644)
        os.truncate(path, 3 << 30)
    else:
        remote.fs.pipe_file(path, os.urandom(4 << 20))
    clone = tmp_path / "clone"
    r = run_ledger("clone", remote.url, str(clone), cwd=tmp_path)
    assert r.returncode == 5, r.stdout + r.stderr
    assert f"object {oid} on remote" in r.stderr and "nothing was downloaded" in r.stderr
    assert f"where {size} were expected" in r.stderr, r.stderr
    # A clone that fails leaves nothing: no ledger, and no hidden one it was filling.
    assert not clone.exists() or list(clone.iterdir()) == []


class _Endless:
    """A remote object that never ends (a file still growing, a stream without end), whose
    server may state a size before the first byte."""

    def __init__(self, size: int | None) -> None:
        self.size, self.served = size, 0

    def readinto(self, view: memoryview) -> int:
        view[:] = bytes(len(view))
        self.served += len(view)
        return len(view)

    def close(self) -> None:
        pass


def _serving(tmp_path: Path, endless: _Endless) -> tuple[Any, Any]:
    """A folder remote whose every object reads as ``endless``, and an empty ledger."""
    import contextlib
    from collections.abc import Iterator

    from ledger.share.remote import Remote
    from ledger.store import Store

    remote = Remote(str(tmp_path / "remote"))

    @contextlib.contextmanager
    def reading(oid: str) -> Iterator[_Endless]:
        yield endless

    remote.reading = reading  # type: ignore[method-assign,assignment]
    return remote, Store.init(tmp_path / ".ledger")


@pytest.mark.parametrize("stated", [None, 1 << 20])
def test_a_remote_object_growing_past_its_listed_size_is_not_read_on(
    tmp_path: Path, stated: int | None
) -> None:
    """A remote file that yields more than its listing said is cut one byte past that size,
    not read to its end; one whose server states more is refused before a byte is read."""

    from ledger.errors import CorruptObjectError
    from ledger.share.transfer import _fetch
    from ledger.store.incoming import Incoming

    endless = _Endless(stated)
    remote, store = _serving(tmp_path, endless)
    oid = "b3:" + "0" * 64
    with (
        Incoming(store.objects) as box,
        pytest.raises(CorruptObjectError, match="more than the 1000 bytes"),
    ):
        _fetch(remote, box, oid, 1000, None)
    assert endless.served == (1001 if stated is None else 0)
    assert os.listdir(store.tmp_dir) == [] and list(store.objects) == []


@pytest.mark.parametrize("temp", ["unnamed", "named"])
def test_a_remote_object_growing_past_its_listed_size_over_several_pieces_stops_one_byte_on(
    tmp_path: Path, temp: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As above for an object listed larger than one piece of the writer's buffer
    (``incoming.PIECE``): each read asks only for what is left up to one byte past the listed
    size, so a stream that never ends is read exactly that far, not a piece further; the temp
    file its first pieces went to is removed, also where it had a name (a file system without
    O_TMPFILE)."""

    from ledger.errors import CorruptObjectError
    from ledger.share.transfer import _fetch
    from ledger.store import incoming
    from ledger.store.incoming import PIECE, Incoming

    if temp == "named":
        monkeypatch.setattr(incoming, "open_unnamed", lambda *a, **k: None)

    endless = _Endless(None)
    remote, store = _serving(tmp_path, endless)
    listed = 2 * PIECE + 1000
    with (
        Incoming(store.objects) as box,
        pytest.raises(CorruptObjectError, match=f"more than the {listed} bytes"),
    ):
        _fetch(remote, box, "b3:" + "0" * 64, listed, None)
    assert endless.served == listed + 1
    assert os.listdir(store.tmp_dir) == [] and list(store.objects) == []


def test_the_import_help_states_the_package_modules_limit() -> None:
    # `ledger import` leaves --max-ratio unset unless given, and import_package applies
    # MAX_RATIO; the help text names the number without importing the package module.
    from ledger.share.package import MAX_RATIO

    r = run_ledger("import", "--help", COLUMNS="200")
    assert r.returncode == 0, r.stderr
    assert f"default {MAX_RATIO})" in " ".join(r.stdout.split()), r.stdout
