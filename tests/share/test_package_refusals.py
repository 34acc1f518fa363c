"""Every refusal of `ledger import` that the hostile-package table does not reach: each way a
manifest can be malformed, a README or an object whose content differs from its digest (above
it and below it), a package that does not begin with its manifest, an entry whose name a
package never holds, and packages that are not whole (not zstd, cut short, without a manifest,
without a README). Each is refused with its own words, exit 2 (or 5 for a corrupt object), and
the ledger is left as it was."""

from __future__ import annotations

import io
import itertools
import tarfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
import zstandard
from _support import one_byte_changes, run_ledger
from test_package_import import (
    Member,
    manifest_of,
    read_members,
    snapshot,
    with_manifest,
    write_members,
)

from ledger._hashing import hash_bytes


def _refused(fresh: Path, pkg: Path, words: str, code: int = 2) -> None:
    before = snapshot(fresh / ".ledger")
    r = run_ledger("import", str(pkg), cwd=fresh)
    assert r.returncode == code, r.stdout + r.stderr
    assert r.stderr.startswith("ledger: error: ") and words in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert snapshot(fresh / ".ledger") == before
    assert not list((fresh / ".ledger" / "tmp").iterdir())


def _edit(change: Callable[[dict[str, Any]], object]) -> Callable[[list[Member]], list[Member]]:
    def apply(members: list[Member]) -> list[Member]:
        m = manifest_of(members)
        got = change(m)
        return with_manifest(members, m if got is None else got)  # type: ignore[arg-type]

    return apply


def _first_object(m: dict[str, Any]) -> str:
    return next(iter(m["objects"]))


MANIFESTS: dict[str, tuple[Callable[[dict[str, Any]], object], str]] = {
    "not-a-mapping": (lambda m: [m], "its manifest does not describe a ledger package"),
    "another-format": (lambda m: m.update(format="zip"), "does not describe a ledger package"),
    # "zip" sorts after "ledgerpkg", "dvc" before it
    "format-before-ours": (lambda m: m.update(format="dvc"), "does not describe a ledger package"),
    "no-format": (lambda m: m.pop("format") and None, "does not describe a ledger package"),
    "version-as-text": (lambda m: m.update(version="1"), "its format version is '1'"),
    "version-0": (lambda m: m.update(version=0), "its format version is 0"),
    "objects-a-list": (lambda m: m.update(objects=[]), "lacks the objects or refs table"),
    "refs-a-list": (lambda m: m.update(refs=[]), "lacks the objects or refs table"),
    "object-not-an-id": (
        lambda m: m["objects"].update({"b3:xyz": 1}) or m.update(total_size=m["total_size"] + 1),
        "manifest entry 'b3:xyz': 1 is not an object id and size",
    ),
    "size-as-text": (
        lambda m: m["objects"].update({_first_object(m): "12"}),
        "is not an object id and size",
    ),
    "size-negative": (
        lambda m: (
            m["objects"].update({"b3:" + "cd" * 32: -1}) or m.update(total_size=m["total_size"] - 1)
        ),
        "-1 is not an object id and size",
    ),
    "ref-to-no-id": (
        lambda m: m["refs"].update({"notes/x": "nope"}),
        "manifest ref notes/x points at 'nope', not an object id",
    ),
    "total-too-small": (
        lambda m: m.update(total_size=m["total_size"] - 1),
        "total_size is not the sum of its object sizes",
    ),
    "total-too-large": (
        lambda m: m.update(total_size=m["total_size"] + 1),
        "total_size is not the sum of its object sizes",
    ),
    "no-readme-digest": (lambda m: m.pop("readme") and None, "does not name the README's digest"),
    "readme-digest-not-an-id": (
        lambda m: m.update(readme="README"),
        "does not name the README's digest",
    ),
}


@pytest.mark.parametrize("case", sorted(MANIFESTS))
def test_a_malformed_manifest_is_refused_with_what_is_wrong(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path, case: str
) -> None:
    _, _, pkg = packaged
    change, words = MANIFESTS[case]
    bad = tmp_path / "bad.ledgerpkg"
    write_members(bad, _edit(change)(read_members(pkg)))
    _refused(fresh, bad, words)


def _one_each_side(digest: str, changes: Iterable[bytes]) -> list[bytes]:
    """Two of ``changes``: one hashing below ``digest``, one above. The digest is of a
    package the test made (run ids, times), so it lands anywhere: N tries miss a side in
    about 2 runs of N + 1. 200 tries missed 1 run in 100 (a README's `b3:fe08...`, 1 in 5 for
    that digest, failed a fresh machine's CI run on 7 December); 200,000 miss 1 in 100,000.
    Most runs find both sides within a few tries."""
    below = above = None
    for changed in itertools.islice(changes, 200_000):
        h = hash_bytes(changed)
        if h < digest and below is None:
            below = changed
        elif h > digest and above is None:
            above = changed
        if below is not None and above is not None:
            return [below, above]
    raise AssertionError("no change hashed on both sides")


@pytest.mark.parametrize("side", [0, 1])
def test_a_readme_that_differs_from_its_digest_is_refused(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path, side: int
) -> None:
    _, _, pkg = packaged
    members = read_members(pkg)
    i = next(i for i, (info, _) in enumerate(members) if info.name == "README.md")
    readme = members[i][1]
    digest = manifest_of(members)["readme"]
    edits = (readme + b"\nedited %d\n" % n for n in itertools.count())
    changed = _one_each_side(digest, edits)[side]
    members[i] = (members[i][0], changed)
    bad = tmp_path / "readme.ledgerpkg"
    write_members(bad, members)
    _refused(fresh, bad, "README.md does not match the digest its manifest gives")


@pytest.mark.parametrize("side", [0, 1])
def test_an_object_whose_content_hashes_elsewhere_is_refused(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path, side: int
) -> None:
    """The same size, one byte changed: its hash lands below its name, or above."""
    _, _, pkg = packaged
    members = read_members(pkg)
    i = next(i for i, (info, _) in enumerate(members) if info.name.startswith("objects/"))
    info, data = members[i]
    oid = "b3:" + info.name.rsplit("/", 1)[1]

    # Any one byte: the last byte's 255 changes were too few for a digest near either end.
    members[i] = (info, _one_each_side(oid, one_byte_changes(data))[side])
    bad = tmp_path / "corrupt.ledgerpkg"
    write_members(bad, members)
    _refused(fresh, bad, f"package entry {info.name} is corrupt", code=5)


def test_a_package_that_begins_with_an_object_is_refused(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path
) -> None:
    _, _, pkg = packaged
    members = read_members(pkg)
    i = next(i for i, (info, _) in enumerate(members) if info.name.startswith("objects/"))
    bad = tmp_path / "object-first.ledgerpkg"
    write_members(bad, [members[i], *members[:i], *members[i + 1 :]])
    _refused(fresh, bad, f"its first entry is {members[i][0].name!r}, not manifest.json")


def test_a_package_without_a_readme_is_refused(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path
) -> None:
    _, _, pkg = packaged
    bad = tmp_path / "no-readme.ledgerpkg"
    write_members(bad, [m for m in read_members(pkg) if m[0].name != "README.md"])
    _refused(fresh, bad, "it has no README.md")


def test_an_empty_archive_has_no_manifest(fresh: Path, tmp_path: Path) -> None:
    bad = tmp_path / "empty.ledgerpkg"
    write_members(bad, [])
    _refused(fresh, bad, "it has no manifest")


def test_what_is_not_zstd_or_is_cut_short_cannot_be_read(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path
) -> None:
    junk = tmp_path / "junk.ledgerpkg"
    junk.write_bytes(b"hello, not zstd")
    _refused(fresh, junk, "it cannot be read")
    _, _, pkg = packaged
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in read_members(pkg):
            tar.addfile(info, io.BytesIO(data))
    whole = raw.getvalue()
    with tarfile.open(fileobj=io.BytesIO(whole), mode="r") as tar:
        biggest = max(tar.getmembers(), key=lambda m: m.size)
    assert biggest.size > 1
    # Cut inside the largest member's content (a cut between members reads as a short tar).
    cut = tmp_path / "cut.ledgerpkg"
    cut.write_bytes(
        zstandard.ZstdCompressor().compress(whole[: biggest.offset_data + biggest.size // 2])
    )
    _refused(fresh, cut, "it cannot be read")


def test_the_absent_object_named_is_the_first_of_those_missing(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path
) -> None:
    _, _, pkg = packaged
    members = read_members(pkg)
    objs = sorted(info.name for info, _ in members if info.name.startswith("objects/"))
    assert len(objs) >= 2
    gone = set(objs[:2])
    bad = tmp_path / "two-missing.ledgerpkg"
    write_members(bad, [m for m in members if m[0].name not in gone])
    first = "b3:" + objs[0].rsplit("/", 1)[1]
    _refused(fresh, bad, f"2 object(s) its manifest lists are absent, e.g. {first}")


def test_a_fifo_refused_through_the_api_leaves_no_descriptor_open(
    fresh: Path, tmp_path: Path
) -> None:
    """A long-lived process (a notebook, a service) that calls ``import_package`` on a FIFO:
    each refusal closes what it opened."""
    import os

    from ledger.errors import UsageError
    from ledger.share.package import import_package
    from ledger.store import Store

    fifo = tmp_path / "pipe.ledgerpkg"
    os.mkfifo(fifo)
    store = Store.open(fresh / ".ledger")
    before = sorted(os.listdir("/proc/self/fd"))
    for _ in range(3):
        with pytest.raises(UsageError, match="not a regular file"):
            import_package(store, fifo)
    assert sorted(os.listdir("/proc/self/fd")) == before


def test_an_object_larger_than_a_read_is_imported_whole(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path
) -> None:
    """3 MiB of random bytes, listed truthfully: read in 1 MiB pieces, hashed whole."""
    import os

    from ledger.store import Store

    _, run_id, pkg = packaged
    blob = os.urandom(3 << 20)
    oid = hash_bytes(blob)
    members = read_members(pkg)
    m = manifest_of(members)
    m["objects"][oid] = len(blob)  # type: ignore[index]
    m["total_size"] = sum(m["objects"].values())  # type: ignore[attr-defined]
    members = with_manifest(members, m)
    members.append((tarfile.TarInfo(f"objects/b3/{oid[3:]}"), blob))
    big = tmp_path / "big-object.ledgerpkg"
    write_members(big, members)
    r = run_ledger("import", str(big), cwd=fresh)
    assert r.returncode == 0, r.stderr
    store = Store.open(fresh / ".ledger")
    assert store.objects.get_bytes(oid) == blob
    assert store.refs.get(f"runs/{run_id}") is not None


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("notes.txt", "unexpected entry 'notes.txt'"),
        ("objects/b3/" + "AB" * 32, "unexpected entry 'objects/b3/" + "AB" * 32 + "'"),
        ("objects/sha256/" + "ab" * 32, "unexpected entry 'objects/sha256/"),
        ("objects/./b3/" + "ab" * 32, "has an absolute or escaping path"),
        ("objects//b3/" + "ab" * 32, "has an absolute or escaping path"),
        ("objects\\b3\\" + "ab" * 32, "has an absolute or escaping path"),
    ],
)
def test_an_entry_a_package_never_holds_is_refused_by_its_name(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path, name: str, words: str
) -> None:
    """A package holds its manifest, its README and ``objects/b3/<64 lowercase hex>``: a stray
    file, an object named in capitals or under another algorithm, and a name with ``.``, an
    empty part or a backslash (which another system could read as a separator) are refused."""
    _, _, pkg = packaged
    bad = tmp_path / "stray.ledgerpkg"
    write_members(bad, [*read_members(pkg), (tarfile.TarInfo(name), b"stowaway")])
    _refused(fresh, bad, words)
