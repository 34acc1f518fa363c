"""Where object files live, what they look like, and how ids are listed and resolved.

docs/format.md: ``objects/b3/<first 2 hex digits>/<other 62>``, written read-only (0444); a
prefix of at least 4 hex digits resolves when unique, and an ambiguous one lists up to five
candidates as 16-character ids. Pinned here because mutation testing (issue #18) showed that
no test would notice these changing.
"""

from __future__ import annotations

import io
import itertools
import os
import random
import stat
import time
from pathlib import Path

import pytest
import zstandard

from ledger._hashing import hash_bytes
from ledger.errors import AmbiguousIdError, UnknownIdError, UsageError
from ledger.store import Store


def test_object_files_sit_under_their_fan_out_and_are_read_only(store: Store) -> None:
    small = store.objects.put_bytes(b"small")
    streamed = store.objects.put_stream(io.BytesIO(b"streamed " * 50))
    for oid in (small, streamed):
        digest = oid.removeprefix("b3:")
        path = store.root / "objects" / "b3" / digest[:2] / digest[2:]
        assert store.objects.path_of(oid) == path and path.is_file()
        assert stat.S_IMODE(path.stat().st_mode) == 0o444


def test_listing_skips_what_is_not_an_object(store: Store) -> None:
    oid = store.objects.put_bytes(b"real")
    base = store.root / "objects" / "b3"
    (base / "README").write_text("not a fan-out directory\n")
    (base / "abc").mkdir()  # three characters: not a fan-out directory
    (base / "abc" / ("0" * 62)).write_bytes(b"\x00x")
    (base / "zz").mkdir()
    (base / "zz" / "not-hex").write_bytes(b"\x00x")
    (base / "ab").write_bytes(b"a file where a fan-out directory would be")
    (base / "a").mkdir()  # one character: its 63-digit entry would pass for an id
    (base / "a" / ("1" * 63)).write_bytes(b"\x00x")
    assert list(store.objects) == [oid]


def _sharing_prefix(count: int) -> tuple[str, list[bytes]]:
    """``count`` contents whose ids share their first 4 hex digits (found by hashing only)."""
    groups: dict[str, list[bytes]] = {}
    for i in itertools.count():
        content = f"prefix {i}".encode()
        group = groups.setdefault(hash_bytes(content)[3:7], [])
        group.append(content)
        if len(group) == count:
            return hash_bytes(content)[3:7], group
    raise AssertionError("unreachable")


def test_an_ambiguous_prefix_lists_five_candidates_as_short_ids(store: Store) -> None:
    prefix, contents = _sharing_prefix(7)
    oids = sorted(store.objects.put_bytes(c) for c in contents)
    with pytest.raises(AmbiguousIdError) as caught:
        store.objects.resolve(prefix)
    assert caught.value.candidates == oids
    assert caught.value.message == f"{prefix!r} matches 7 objects"
    assert caught.value.hint == "give more digits: " + ", ".join(o[:16] for o in oids[:5])
    assert store.objects.resolve(oids[0][:20]) == oids[0]
    assert store.objects.resolve(oids[0]) == oids[0]
    assert store.objects.resolve(oids[0].removeprefix("b3:")) == oids[0]


@pytest.mark.parametrize(
    "bad",
    [
        "b3:../../../../etc/passwd",
        "b3:" + "A" * 64,  # upper case
        "b3:" + "0" * 63,
        "b3:" + "0" * 65,
        "sha256:" + "0" * 64,
        "0" * 64,  # the prefix is part of an id
    ],
)
def test_a_malformed_id_never_becomes_a_path(store: Store, bad: str) -> None:
    for op in (store.objects.path_of, store.objects.has, store.objects.get_bytes):
        with pytest.raises(UsageError, match="is not an object id"):
            op(bad)


@pytest.mark.parametrize("how", ["bytes-raw", "bytes-zstd", "stream-raw", "stream-zstd"])
def test_an_object_file_is_complete_when_it_is_linked_into_place(
    store: Store, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Write ordering (docs/format.md): the temp file holds every byte before the link makes
    it visible, so a concurrent reader never sees a partial object. The link is real."""
    content = random.Random(1).randbytes(3000) if how.endswith("raw") else b"z" * 3000
    seen: list[bytes] = []
    real_link = os.link

    def link(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        seen.append(Path(src).read_bytes())
        real_link(src, dst)

    monkeypatch.setattr(os, "link", link)
    if how.startswith("bytes"):
        oid = store.objects.put_bytes(content)
    else:
        oid = store.objects.put_stream(io.BytesIO(content))
    monkeypatch.undo()
    assert seen == [store.objects.path_of(oid).read_bytes()]
    codec = seen[0][:1]
    assert codec == (b"\x00" if how.endswith("raw") else b"\x01")
    body = seen[0][1:]
    if codec == b"\x01":  # a streamed frame does not record its size: read it as a stream
        body = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(body)).read()
    assert body == content


def test_publishing_an_id_that_is_already_there_reports_nothing_new(store: Store) -> None:
    """Two writers of one id race at the rename; the loser must not count its bytes as new."""
    oid = store.objects.put_bytes(b"raced")
    before = store.objects.path_of(oid).stat().st_ino
    tmp = store.objects.tmp_dir / "obj-loser"
    tmp.write_bytes(b"\x00raced")
    assert store.objects._publish(tmp, oid) is False
    assert store.objects.path_of(oid).stat().st_ino == before


def test_an_object_named_by_another_writer_after_the_check_is_touched_not_new(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other writer names the object between this writer's check and its link: the link
    is refused, nothing is replaced, the object is touched (gc's grace starts again) and this
    writer does not report it new."""
    oid = store.objects.put_bytes(b"raced later")
    path = store.objects.path_of(oid)
    before = path.stat().st_ino
    old = time.time() - 3 * 86400
    os.utime(path, (old, old))
    real = store.objects.touch
    checks: list[str] = []

    def not_there_yet(o: str) -> bool:
        checks.append(o)
        return False if len(checks) == 1 else real(o)

    monkeypatch.setattr(store.objects, "touch", not_there_yet)
    tmp = store.objects.tmp_dir / "obj-late"
    tmp.write_bytes(b"\x00raced later")
    assert store.objects._publish(tmp, oid) is False
    assert len(checks) == 2 and path.stat().st_ino == before
    assert path.stat().st_mtime > time.time() - 600


def test_a_full_id_that_is_not_stored_is_unknown(store: Store) -> None:
    present = store.objects.put_bytes(b"present")
    absent = hash_bytes(b"absent")
    with pytest.raises(UnknownIdError) as caught:
        store.objects.resolve(absent)
    assert caught.value.message == f"no object {absent} in this ledger"
    with pytest.raises(UnknownIdError, match="no object id starts with"):
        store.objects.resolve(absent[:10])
    assert store.objects.resolve(present) == present


def test_touch_all_makes_no_syscall_per_id_in_a_new_store(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``store_inputs`` skips the inputs stored already with ``touch_all``: in a new store
    that must cost no syscall per file."""
    from ledger.store import batch
    from ledger.store import objects as objects_module

    ids = [hash_bytes(os.urandom(10)) for _ in range(300)]
    touched: list[str] = []
    real = objects_module.os.utime

    def spy(path: str, *a: object) -> None:
        touched.append(path)
        real(path, *a)  # type: ignore[arg-type]

    monkeypatch.setattr(objects_module.os, "utime", spy)
    assert store.objects.touch_all(ids) == set()
    assert touched == []
    # Stored ones are found and touched; a missing one in an existing fan folder is not.
    (tmp_path / "in").mkdir()
    paths = []
    for name in "ab":
        (tmp_path / "in" / name).write_bytes(name.encode() * 100)
        paths.append(str(tmp_path / "in" / name))
    a, b = batch.put_files(store.objects, paths)
    old = time.time() - 3 * 86400
    os.utime(store.objects.path_of(a), (old, old))
    twin = "b3:" + a[3:5] + "0" * 62  # same fan folder as a, never stored
    touched.clear()
    assert store.objects.touch_all([a, b, twin, *ids]) == {a, b}
    assert store.objects.path_of(a).stat().st_mtime > time.time() - 600
    fans = {a[3:5], b[3:5]}  # the only fan folders there: only ids in them cost a syscall
    expected = [store.objects.name_of(o) for o in [a, b, twin, *ids] if o[3:5] in fans]
    assert sorted(touched) == sorted(expected)
    with pytest.raises(UsageError):
        store.objects.touch_all([a[:-1] + "Z"])


def test_name_of_is_path_of_as_a_str(store: Store) -> None:
    oid = hash_bytes(b"x")
    assert store.objects.name_of(oid) == str(store.objects.path_of(oid))
    with pytest.raises(UsageError):
        store.objects.name_of("b3:" + "0" * 63)
