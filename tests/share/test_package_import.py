"""`ledger import` checks a package whole before anything becomes visible, and refuses hostile
or damaged ones with a clear error."""

from __future__ import annotations

import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard
from _support import run_ledger

from ledger.store import Store

Member = tuple[tarfile.TarInfo, bytes]


def read_members(pkg: Path) -> list[Member]:
    out = []
    with (
        open(pkg, "rb") as raw,
        zstandard.ZstdDecompressor().stream_reader(raw) as z,
        tarfile.open(fileobj=z, mode="r|") as tar,
    ):
        for m in tar:
            f = tar.extractfile(m)
            out.append((m, f.read() if f else b""))
    return out


def write_members(pkg: Path, members: list[Member]) -> None:
    with (
        open(pkg, "wb") as raw,
        zstandard.ZstdCompressor().stream_writer(raw) as z,
        tarfile.open(fileobj=z, mode="w|", format=tarfile.PAX_FORMAT) as tar,
    ):
        for info, data in members:
            info.size = len(data) if info.isreg() else 0
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)


def manifest_of(members: list[Member]) -> dict[str, object]:
    return json.loads(members[0][1])  # type: ignore[no-any-return]


def with_manifest(members: list[Member], manifest: dict[str, object]) -> list[Member]:
    return [(members[0][0], json.dumps(manifest).encode()), *members[1:]]


def snapshot(ledger: Path) -> tuple[list[str], bytes]:
    store = Store.open(ledger)
    return sorted(store.objects), store.log.path.read_bytes() if store.log.path.exists() else b""


def _first_object(members: list[Member]) -> int:
    return next(i for i, (m, _) in enumerate(members) if m.name.startswith("objects/"))


def _traversal(ms: list[Member]) -> list[Member]:
    ms[-1][0].name = "../../evil"
    return ms


def _absolute(ms: list[Member]) -> list[Member]:
    ms[-1][0].name = "/tmp/evil"
    return ms


def _symlink(ms: list[Member]) -> list[Member]:
    link = tarfile.TarInfo(ms[-1][0].name)
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    return [*ms[:-1], (link, b"")]


def _hardlink(ms: list[Member]) -> list[Member]:
    link = tarfile.TarInfo(ms[-1][0].name)
    link.type, link.linkname = tarfile.LNKTYPE, ms[-2][0].name
    return [*ms[:-1], (link, b"")]


def _duplicate(ms: list[Member]) -> list[Member]:
    return [*ms, ms[-1]]


def _manifest_not_first(ms: list[Member]) -> list[Member]:
    return [ms[1], ms[0], *ms[2:]]


def _missing_object(ms: list[Member]) -> list[Member]:
    return ms[:-1]


def _extra_object(ms: list[Member]) -> list[Member]:
    info = tarfile.TarInfo("objects/b3/" + "0" * 64)
    return [*ms, (info, b"stowaway")]


def _bomb(ms: list[Member]) -> list[Member]:
    # A member far larger than the manifest says: refused from its header, before reading.
    i = _first_object(ms)
    ms[i] = (ms[i][0], b"\0" * (64 << 20))
    return ms


def _unknown_version(ms: list[Member]) -> list[Member]:
    m = manifest_of(ms)
    m["version"] = 99
    return with_manifest(ms, m)


def _size_lie(ms: list[Member]) -> list[Member]:
    m = manifest_of(ms)
    objects = m["objects"]
    assert isinstance(objects, dict)
    first = next(iter(objects))
    objects[first] += 1
    m["total_size"] = sum(objects.values())
    return with_manifest(ms, m)


def _bad_ref_name(ms: list[Member]) -> list[Member]:
    m = manifest_of(ms)
    refs = m["refs"]
    assert isinstance(refs, dict)
    refs["../../config.json"] = next(iter(refs.values()))
    return with_manifest(ms, m)


HOSTILE: dict[str, tuple[Callable[[list[Member]], list[Member]], int, str]] = {
    "traversal": (_traversal, 2, "absolute or escaping path"),
    "absolute": (_absolute, 2, "absolute or escaping path"),
    "symlink": (_symlink, 2, "is a link"),
    "hardlink": (_hardlink, 2, "is a link"),
    "duplicate": (_duplicate, 2, "appears twice"),
    "manifest-not-first": (_manifest_not_first, 2, "not manifest.json"),
    "missing-object": (_missing_object, 2, "are absent"),
    "extra-object": (_extra_object, 2, "not in its manifest"),
    "bomb": (_bomb, 2, "the manifest says"),
    "unknown-version": (_unknown_version, 4, "format version 99"),
    "size-lie": (_size_lie, 2, "the manifest says"),
    "bad-ref-name": (_bad_ref_name, 2, "not a valid ref name"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_packages_are_refused_and_nothing_changes(
    case: str, packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path
) -> None:
    _, _, pkg = packaged
    change, code, words = HOSTILE[case]
    bad = tmp_path / "bad.ledgerpkg"
    write_members(bad, change(read_members(pkg)))
    before = snapshot(fresh / ".ledger")
    r = run_ledger("import", str(bad), cwd=fresh)
    assert r.returncode == code, r.stderr
    assert r.stderr.startswith("ledger: error: ") and words in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert snapshot(fresh / ".ledger") == before
    assert not list((fresh / ".ledger" / "tmp").iterdir())  # the staging folder is gone
    assert not (tmp_path / "evil").exists()


def test_a_corrupt_object_is_named_and_refused(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path
) -> None:
    _, _, pkg = packaged
    members = read_members(pkg)
    i = _first_object(members)
    info, data = members[i]
    members[i] = (info, bytes([data[0] ^ 1]) + data[1:])
    bad = tmp_path / "bad.ledgerpkg"
    write_members(bad, members)
    before = snapshot(fresh / ".ledger")
    r = run_ledger("import", str(bad), cwd=fresh)
    assert r.returncode == 5
    assert f"package entry {info.name} is corrupt" in r.stderr
    assert snapshot(fresh / ".ledger") == before


def test_not_a_package(fresh: Path, tmp_path: Path) -> None:
    junk = tmp_path / "junk.ledgerpkg"
    junk.write_bytes(b"hello, not zstd")
    r = run_ledger("import", str(junk), cwd=fresh)
    assert r.returncode == 2 and "not a valid reproducibility package" in r.stderr
    r = run_ledger("import", str(tmp_path / "absent.ledgerpkg"), cwd=fresh)
    assert r.returncode == 2 and "cannot read" in r.stderr


def test_import_twice_adds_nothing_and_verify_stays_clean(
    packaged: tuple[Path, str, Path], fresh: Path
) -> None:
    _, run_id, pkg = packaged
    first = run_ledger("import", str(pkg), "--json", cwd=fresh)
    assert first.returncode == 0, first.stderr
    got = json.loads(first.stdout)
    assert got["runs"] == [run_id] and got["new_objects"] == got["objects"]
    assert f"runs/{run_id}" in got["refs_added"]
    log = Store.open(fresh / ".ledger").log
    lines = [e.data for e in log.entries()]
    assert {d["op"] for d in lines} == {"import"}
    assert all(d["origin"] == got["origin"]["ledger"] for d in lines)
    assert all(d["origin_head"] == got["origin"]["head"] for d in lines)
    again = run_ledger("import", str(pkg), "--json", cwd=fresh)
    got2 = json.loads(again.stdout)
    assert got2["new_objects"] == 0 and got2["refs_added"] == [] and got2["collisions"] == []
    r = run_ledger("verify", cwd=fresh)
    assert r.returncode == 0, r.stdout


def test_a_colliding_ref_is_reported_and_kept(
    packaged: tuple[Path, str, Path], fresh: Path
) -> None:
    _, run_id, pkg = packaged
    store = Store.open(fresh / ".ledger")
    mine = store.put_json({"kind": "note", "schema": 1, "text": "mine"})
    store.set_ref(f"notes/{run_id}", mine)
    members = read_members(pkg)
    m = manifest_of(members)
    refs = m["refs"]
    assert isinstance(refs, dict)
    refs[f"notes/{run_id}"] = refs[f"runs/{run_id}"]
    pkg2 = fresh / "colliding.ledgerpkg"
    write_members(pkg2, with_manifest(members, m))
    r = run_ledger("import", str(pkg2), cwd=fresh)
    assert r.returncode == 1
    assert f"collision: notes/{run_id} is {mine} here" in r.stdout
    assert store.refs.get(f"notes/{run_id}") == mine
    assert store.refs.get(f"runs/{run_id}") == refs[f"runs/{run_id}"]


def test_a_log_line_claiming_import_must_name_its_origin(
    packaged: tuple[Path, str, Path], fresh: Path
) -> None:
    from ledger.index.consistency import check_log_records

    _, run_id, pkg = packaged
    assert run_ledger("import", str(pkg), cwd=fresh).returncode == 0
    store = Store.open(fresh / ".ledger")
    assert check_log_records(store) == []
    oid = store.refs.get(f"runs/{run_id}")
    assert oid is not None
    # A run is imported once: the line without an origin makes another run's ref.
    store.set_ref(f"runs/{run_id[:-1]}{'0' if run_id[-1] != '0' else '1'}", oid, op="import")
    problems = [p.message for p in check_log_records(store)]
    assert any("must name the origin" in p for p in problems), problems
