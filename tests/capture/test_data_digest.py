"""digest_input and store_inputs on real files: kinds, names, errors, the documented rule."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import blake3
import pytest
from _support import SETPRIV, run_without_dac_override

from ledger._canonical import canonical_json
from ledger._hashing import hash_bytes
from ledger._progress import listen, stage
from ledger.capture.data import (
    digest_input,
    manifest_data,
    store_inputs,
    store_manifests,
    stored_in,
)
from ledger.capture.statcache import StatCache
from ledger.errors import UsageError
from ledger.records.data import DataManifest, InputDigest, ManifestEntry, listing_bytes
from ledger.store import Store


def b3(data: bytes) -> str:
    return "b3:" + blake3.blake3(data).hexdigest()


def manifest(d: InputDigest) -> DataManifest:
    data = manifest_data(d)
    assert data is not None
    return DataManifest.model_validate(data)


def test_file(tmp_path: Path) -> None:
    f = tmp_path / "x.bin"
    f.write_bytes(b"hello")
    f.chmod(0o640)
    d = digest_input(f, StatCache())
    assert (d.kind, d.digest, d.n_files, d.n_bytes, d.mode) == ("file", b3(b"hello"), 1, 5, 0o640)
    assert d.files is None and d.dvc is None and d.abspath == str(f)


def test_relative_path_is_kept_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a").write_bytes(b"a")
    monkeypatch.chdir(tmp_path)
    d = digest_input(Path("data"), StatCache())
    assert d.path == "data" and d.abspath == str(tmp_path / "data")


def test_nested_directory_follows_the_documented_rule(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    (root / "b" / "c").mkdir(parents=True)
    (root / "a.txt").write_bytes(b"one")
    (root / "b" / "c" / "z.txt").write_bytes(b"three!")
    (root / "b" / "y.txt").write_bytes(b"")
    d = digest_input(root, StatCache())
    # Recomputed by hand from docs/reference/data-digests.md, independent of listing_bytes.
    lines = [
        f"file\0a.txt\0{3}\0{b3(b'one')}\n",
        f"file\0b/c/z.txt\0{6}\0{b3(b'three!')}\n",
        f"file\0b/y.txt\0{0}\0{b3(b'')}\n",
    ]
    assert d.digest == b3("".join(lines).encode())
    assert (d.kind, d.n_files, d.n_bytes) == ("dir", 3, 9)
    m = manifest(d)
    assert [e.path for e in m.entries] == ["a.txt", "b/c/z.txt", "b/y.txt"]
    assert m.dir_digest == d.digest and b3(listing_bytes(m.entries)) == d.digest
    # The manifest id in the digest record is the id the stored record gets.
    assert m.digest() == d.files == b3(canonical_json(m.to_json()))


def test_empty_directory_and_empty_subdirectory(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    d = digest_input(tmp_path / "empty", StatCache())
    assert (d.digest, d.n_files, d.n_bytes) == (b3(b""), 0, 0)
    (tmp_path / "empty" / "sub").mkdir()
    d2 = digest_input(tmp_path / "empty", StatCache())
    assert d2.digest == b3(b"dir\0sub\x000\0\n") != d.digest
    assert manifest(d2).entries[0].type == "dir" and d2.n_files == 0


def test_symlinks_are_recorded_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"secret outside")
    root = tmp_path / "ds"
    root.mkdir()
    (root / "real.txt").write_bytes(b"data")
    (root / "out").symlink_to(outside)
    (root / "in").symlink_to("real.txt")
    (root / "dangling").symlink_to("nowhere")
    d = digest_input(root, StatCache())
    by = {e.path: e for e in manifest(d).entries}
    assert by["out"].type == "symlink" and by["out"].digest == b3(os.fsencode(outside))
    assert by["in"].digest == b3(b"real.txt") and by["dangling"].digest == b3(b"nowhere")
    assert d.n_bytes == 4 and d.n_files == 4  # link targets are not counted as data bytes
    outside.write_bytes(b"changed outside")  # not followed: the digest does not move
    assert digest_input(root, StatCache()).digest == d.digest


def test_top_level_symlink_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f").write_bytes(b"x")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert digest_input(tmp_path / "link", StatCache()).digest == (
        digest_input(tmp_path / "real", StatCache()).digest
    )


def test_unicode_names_sort_by_code_point(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    root.mkdir()
    names = ["zebra", "Ärger", "日本語.txt", "émoji-😀", "a b"]
    for n in names:
        (root / n).write_bytes(n.encode())
    m = manifest(digest_input(root, StatCache()))
    assert [e.path for e in m.entries] == sorted(names)
    assert sorted(names, key=lambda s: s.encode()) == sorted(names)


def test_the_manifest_id_is_its_canonical_json_whatever_the_names(tmp_path: Path) -> None:
    """The digest writes the manifest's JSON itself (not json.dumps): names that JSON must
    escape, non-ASCII names, an empty directory and a symlink give the canonical bytes."""
    root = tmp_path / "ds"
    names = ['q"uote', "back\\slash", "tab\there", "new\nline", "ctl\x01\x1f", "del\x7f"]
    names += ["é/ü.txt", "sep\u2028\u2029", "emoji\U0001f600", "</script>"]
    for i, name in enumerate(names):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(bytes([i]) * i)
    (root / "empty dir").mkdir()
    os.symlink('a "target"', root / "link")
    d = digest_input(root, StatCache())
    data = manifest_data(d)
    assert data is not None and len(data["entries"]) == len(names) + 2
    assert d.files == hash_bytes(canonical_json(data)) == manifest(d).digest()


def test_non_utf8_name_is_refused_not_skipped(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    root.mkdir()
    (Path(os.fsdecode(bytes(root) + b"/bad\xff"))).write_bytes(b"x")
    with pytest.raises(UsageError, match="not valid UTF-8"):
        digest_input(root, StatCache())


def test_missing_input_names_it(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="'nope/data' does not exist") as e:
        digest_input(Path("nope/data"), StatCache())
    assert e.value.hint


def test_fifo_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    root.mkdir()
    os.mkfifo(root / "pipe")
    with pytest.raises(UsageError, match="pipe is not a regular file"):
        digest_input(root, StatCache())


def _root_bypasses_permissions(tmp_path: Path) -> bool:
    probe = tmp_path / "probe"
    probe.write_bytes(b"x")
    probe.chmod(0)
    try:
        probe.read_bytes()
    except PermissionError:
        return False
    finally:
        probe.chmod(0o644)
    return True


def test_unreadable_file_names_it(tmp_path: Path) -> None:
    if _root_bypasses_permissions(tmp_path):
        pytest.skip("running with CAP_DAC_OVERRIDE (root): chmod 000 does not stop reads")
    root = tmp_path / "ds"
    root.mkdir()
    (root / "locked.bin").write_bytes(b"x")
    (root / "locked.bin").chmod(0)
    with pytest.raises(UsageError, match=r"locked\.bin: permission denied"):
        digest_input(root, StatCache())


@pytest.mark.skipif(os.geteuid() != 0 or SETPRIV is None, reason="needs root and setpriv")
def test_unreadable_file_names_it_without_root_privileges(tmp_path: Path) -> None:
    # Root reads through chmod 000; the child drops the capabilities that let it.
    root = tmp_path / "ds"
    root.mkdir()
    (root / "ok.bin").write_bytes(b"x")
    (root / "locked.bin").write_bytes(b"x")
    (root / "locked.bin").chmod(0)
    code = (
        "import sys; from pathlib import Path\n"
        "from ledger.capture.data import digest_input\n"
        "from ledger.capture.statcache import StatCache\n"
        "from ledger.errors import UsageError\n"
        "try:\n"
        f"    digest_input(Path({str(root)!r}), StatCache())\n"
        "except UsageError as e:\n"
        "    print(e.message); sys.exit(2)\n"
    )
    proc = run_without_dac_override(code)
    assert proc.returncode == 2, proc.stderr
    assert f"cannot read input file {root / 'locked.bin'}: permission denied" in proc.stdout


def _messages_without_root_privileges(*inputs: Path) -> list[str]:
    """Each input digested in a child without the capabilities that let root ignore file
    modes: "digested", or the UsageError's message and hint."""
    code = (
        "from pathlib import Path\n"
        "from ledger.capture.data import digest_input\n"
        "from ledger.capture.statcache import StatCache\n"
        "from ledger.errors import UsageError\n"
        f"for given in {[str(p) for p in inputs]!r}:\n"
        "    try:\n"
        "        digest_input(Path(given), StatCache(), dvc=False)\n"
        "        print('digested')\n"
        "    except UsageError as e:\n"
        "        print(e.message, '|', e.hint)\n"
    )
    proc = run_without_dac_override(code)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


@pytest.mark.skipif(os.geteuid() != 0 or SETPRIV is None, reason="needs root and setpriv")
def test_a_folder_that_cannot_be_listed_names_itself_without_root_privileges(
    tmp_path: Path,
) -> None:
    """A folder without read permission cannot be opened; one without search permission is
    listed but its entries cannot be stat'ed: either way the digest stops, naming it."""
    closed = tmp_path / "closed"  # holds a subfolder no one may read
    (closed / "sub").mkdir(parents=True)
    (closed / "ok.bin").write_bytes(b"x")
    (closed / "sub" / "in.bin").write_bytes(b"y")
    (closed / "sub").chmod(0)
    unsearchable = tmp_path / "unsearchable"  # the input itself: readable, not searchable
    unsearchable.mkdir()
    (unsearchable / "in.bin").write_bytes(b"z")
    unsearchable.chmod(0o600)
    hint = "make it readable, or leave it out of --input"
    assert _messages_without_root_privileges(closed, unsearchable) == [
        f"cannot list input directory {closed / 'sub'}: permission denied | {hint}",
        f"cannot list input directory {unsearchable}: permission denied | {hint}",
    ]


@pytest.mark.skipif(os.geteuid() != 0 or SETPRIV is None, reason="needs root and setpriv")
def test_an_input_that_cannot_be_reached_or_read_names_itself_without_root_privileges(
    tmp_path: Path,
) -> None:
    """A file input the user may not read, and an input inside a folder the user may not
    search (it cannot even be stat'ed): each stops the digest with its own message."""
    locked = tmp_path / "locked.bin"
    locked.write_bytes(b"secret")
    locked.chmod(0)
    behind = tmp_path / "behind"
    behind.mkdir()
    (behind / "data.bin").write_bytes(b"x")
    behind.chmod(0o600)
    assert _messages_without_root_privileges(locked, behind / "data.bin") == [
        f"cannot read input file {locked}: permission denied"
        " | make it readable, or leave it out of --input",
        f"cannot access input {str(behind / 'data.bin')!r}: permission denied | None",
    ]


def test_an_input_that_is_neither_a_file_nor_a_folder_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match=r"input '.*pipe' is not a regular file or a directory"):
        digest_input(fifo, StatCache(), dvc=False)


def test_store_inputs_restores_every_file_by_digest(tmp_path: Path, store: Store) -> None:
    root = tmp_path / "ds"
    (root / "sub").mkdir(parents=True)
    (root / "a").write_bytes(b"alpha" * 1000)
    (root / "sub" / "b").write_bytes(b"beta")
    (root / "sub" / "dup").write_bytes(b"beta")
    (root / "ln").symlink_to("a")
    single = tmp_path / "single.txt"
    single.write_bytes(b"single")
    digests = [digest_input(root, StatCache()), digest_input(single, StatCache())]
    report = store_inputs(digests, store)
    # a, b, ln target, single; dup has b's id and is skipped without reading it twice
    assert (report.stored, report.skipped, report.changed) == (4, 1, [])
    assert report.bytes_stored == 5000 + 4 + len("a") + 6
    m = DataManifest.model_validate(store.get_json(digests[0].files or ""))
    for e in m.entries:
        assert e.digest is not None and store.objects.has(e.digest)
        if e.type == "file":
            assert store.objects.get_bytes(e.digest) == (root / e.path).read_bytes()
            assert store.objects.put_file(root / e.path) == e.digest
    assert store.objects.get_bytes(digests[1].digest) == b"single"
    again = store_inputs(digests, store)
    assert (again.stored, again.skipped, again.bytes_stored) == (0, 5, 0)


def test_stored_in_says_whether_the_store_can_restore_each_input(
    tmp_path: Path, store: Store
) -> None:
    root = tmp_path / "ds"
    (root / "sub").mkdir(parents=True)
    (root / "a").write_bytes(b"alpha")
    (root / "sub" / "b").write_bytes(b"beta")
    (root / "ln").symlink_to("a")
    single = tmp_path / "single.txt"
    single.write_bytes(b"single")
    folder, file = digest_input(root, StatCache()), digest_input(single, StatCache())
    assert not stored_in(folder, store) and not stored_in(file, store)
    store_manifests([folder], store)  # the listing alone: its files cannot be restored yet
    assert not stored_in(folder, store)
    store_inputs([folder, file], store)
    assert stored_in(folder, store) is True and stored_in(file, store) is True


def test_a_folder_with_non_ascii_names_stores_its_manifest_under_the_recorded_id(
    tmp_path: Path, store: Store
) -> None:
    """The manifest's canonical bytes hold names as UTF-8, not as \\u escapes: the bytes
    stored are those the recorded id was computed from."""
    root = tmp_path / "ds"
    root.mkdir()
    (root / "café.txt").write_bytes(b"x")
    (root / "日本.bin").write_bytes(b"y")
    d = digest_input(root, StatCache(), dvc=False)
    assert d.files is not None
    store_manifests([d], store)
    raw = store.objects.get_bytes(d.files)
    assert hash_bytes(raw) == d.files
    assert "café.txt".encode() in raw and "日本.bin".encode() in raw
    assert [e["path"] for e in json.loads(raw)["entries"]] == ["café.txt", "日本.bin"]


def test_a_cold_digest_counts_each_file_it_reads_in_the_progress_stage(tmp_path: Path) -> None:
    """Progress counts files and bytes as they are read; a warm digest reads nothing."""
    counted = [0, 0]

    @contextlib.contextmanager
    def listener(what: str, total: int | None) -> Iterator[Callable[[int, int], None]]:
        def ticker(files: int, nbytes: int) -> None:
            counted[0] += files
            counted[1] += nbytes

        yield ticker

    root = tmp_path / "ds"
    root.mkdir()
    for i in range(4):
        (root / f"{i}.bin").write_bytes(b"z" * (1000 + i))
    single = tmp_path / "single.bin"
    single.write_bytes(b"s" * 70)
    cache = StatCache(racy_window_ns=0)
    with listen(listener), stage("digesting inputs"):
        digest_input(root, cache, dvc=False, workers=1)
        digest_input(single, cache, dvc=False)
        assert counted == [5, 4006 + 70]
        digest_input(root, cache, dvc=False, workers=1)
        digest_input(single, cache, dvc=False)
    assert counted == [5, 4006 + 70]


def test_store_inputs_flags_files_changed_since_the_digest(tmp_path: Path, store: Store) -> None:
    root = tmp_path / "ds"
    root.mkdir()
    (root / "a").write_bytes(b"before")
    d = digest_input(root, StatCache())
    (root / "a").write_bytes(b"after!")
    report = store_inputs([d], store)
    assert report.changed == [str(root / "a")]


def test_store_inputs_needs_a_manifest(tmp_path: Path, store: Store) -> None:
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "a").write_bytes(b"a")
    d = digest_input(tmp_path / "ds", StatCache())
    loaded = InputDigest.model_validate(d.model_dump())  # as read back from a record
    with pytest.raises(UsageError, match="no file listing"):
        store_inputs([loaded], store)


def test_store_inputs_reads_a_listing_from_the_store_and_validates_it(
    tmp_path: Path, store: Store
) -> None:
    """A digest read back from a record has no listing in this process: ``store_inputs``
    takes the stored one, as a validated model (its paths are joined to the input's), while
    this process's own listing is used as built."""
    root = tmp_path / "ds"
    (root / "sub").mkdir(parents=True)
    (root / "a").write_bytes(b"alpha")
    (root / "sub" / "b").write_bytes(b"beta")
    d = digest_input(root, StatCache())
    store_manifests([d], store)
    loaded = InputDigest.model_validate(d.model_dump())  # as read back from a record
    report = store_inputs([loaded], store)
    assert (report.stored, report.changed) == (2, [])
    assert store.objects.get_bytes(hash_bytes(b"beta")) == b"beta"
    # A stored listing whose path leaves the input is refused before anything is read.
    data = store.get_json(d.files or "")
    data["entries"][0]["path"] = "../outside"
    bad_files = store.objects.put_bytes(json.dumps(data).encode())
    bad = InputDigest.model_validate({**d.model_dump(), "files": bad_files})
    (tmp_path / "outside").write_bytes(b"secret")
    with pytest.raises(ValueError, match="unsafe path"):
        store_inputs([bad], store)
    assert not store.objects.has(hash_bytes(b"secret"))


def test_manifest_rejects_escaping_paths() -> None:
    for bad in ["../x", "/etc/passwd", "a/../../b", "a//b", "./a", ""]:
        with pytest.raises(ValueError, match="unsafe path"):
            ManifestEntry(path=bad, size=0, mode=0, digest=None)
    assert ManifestEntry(path="back\\slash", size=0, mode=0, digest=None).path == "back\\slash"
