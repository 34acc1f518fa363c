"""The ledger's format version (config.json): 2 since object files may use codec 0x02. A
version 1 ledger is read as it is and raised to 2 before this code writes an object to it, so
an older ledger refuses it by its version instead of calling the new object files corrupt."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from ledger._canonical import canonical_json
from ledger.errors import FormatVersionError, LedgerAccessError
from ledger.store import Store
from ledger.store.batch import put_files
from ledger.store.objects import ALIGN_MIN, CODEC_RAW_ALIGNED
from ledger.store.repo import FORMAT_VERSION


def _config(root: Path) -> dict[str, object]:
    return json.loads((root / "config.json").read_text())


def _as_version_1(root: Path) -> None:
    config = {**_config(root), "version": 1}
    (root / "config.json").write_bytes(canonical_json(config) + b"\n")


def test_a_new_ledger_is_version_2(tmp_path: Path) -> None:
    Store.init(tmp_path / "l")
    assert FORMAT_VERSION == 2 and _config(tmp_path / "l")["version"] == 2


def test_writes_to_a_version_2_ledger_leave_its_config_alone(tmp_path: Path) -> None:
    # Only an older version is raised: a current ledger's config.json is not rewritten (same
    # file, not a new one with the same bytes) by the first write of each process.
    root = tmp_path / "l"
    Store.init(root)
    before = (root / "config.json").stat()
    store = Store.open(root)
    store.objects.put_bytes(os.urandom(ALIGN_MIN))
    store.objects.put_bytes(b"small")
    after = (root / "config.json").stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert store.config["version"] == 2


def test_a_version_1_ledger_is_read_without_being_written(tmp_path: Path) -> None:
    root = tmp_path / "l"
    store = Store.init(root)
    oid = store.objects.put_bytes(b"x" * 10)
    _as_version_1(root)
    before = (root / "config.json").read_bytes()
    again = Store.open(root)
    assert again.objects.get_bytes(oid) == b"x" * 10
    again.objects.put_bytes(b"x" * 10)  # stored already: nothing written
    assert (root / "config.json").read_bytes() == before


@pytest.mark.parametrize("writer", ["put_bytes", "put_stream", "put_files"])
def test_the_first_write_raises_a_version_1_ledger_before_any_object_file(
    tmp_path: Path, writer: str
) -> None:
    root = tmp_path / "l"
    Store.init(root)
    _as_version_1(root)
    store = Store.open(root)
    data = os.urandom(ALIGN_MIN)  # raw and large: a 0x02 file
    seen: list[object] = []
    real = store.objects._publish  # the version must be 2 before an object gets its name

    def publish(*args: object, **kwargs: object) -> object:
        seen.append(_config(root)["version"])
        return real(*args, **kwargs)  # type: ignore[arg-type]

    store.objects._publish = publish  # type: ignore[method-assign]
    if writer == "put_bytes":
        oid = store.objects.put_bytes(data, compress=False)
    elif writer == "put_stream":
        import io

        oid = store.objects.put_stream(io.BytesIO(data), compress=False)
    else:
        src = tmp_path / "f.bin"
        src.write_bytes(data)
        (oid,) = put_files(store.objects, [str(src)])
    assert _config(root)["version"] == 2 and store.config["version"] == 2
    assert all(v == 2 for v in seen)
    with open(store.objects.path_of(oid), "rb") as f:
        assert f.read(1)[0] == CODEC_RAW_ALIGNED
    # Everything else in the config is kept.
    assert {k: v for k, v in _config(root).items() if k != "version"} == {
        k: v for k, v in Store.open(root).config.items() if k != "version"
    }


def test_an_older_ledger_would_refuse_it_by_its_version(tmp_path: Path) -> None:
    # What this code does with a ledger of a later version, an older one does with version 2.
    root = tmp_path / "l"
    Store.init(root)
    config = {**_config(root), "version": FORMAT_VERSION + 1}
    (root / "config.json").write_bytes(canonical_json(config) + b"\n")
    with pytest.raises(FormatVersionError, match="format version 3; this ledger reads up to 2"):
        Store.open(root)


def test_writers_racing_on_a_version_1_ledger_both_leave_version_2(tmp_path: Path) -> None:
    root = tmp_path / "l"
    Store.init(root)
    _as_version_1(root)
    stores = [Store.open(root) for _ in range(4)]
    errors: list[BaseException] = []

    def write(store: Store, i: int) -> None:
        try:
            store.objects.put_bytes(os.urandom(ALIGN_MIN) + bytes([i]), compress=False)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=write, args=(s, i)) for i, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and _config(root)["version"] == 2
    assert not list((root / "tmp").iterdir())


def test_a_version_1_ledger_that_cannot_be_written_says_so(tmp_path: Path) -> None:
    root = tmp_path / "l"
    Store.init(root)
    _as_version_1(root)
    store = Store.open(root)
    # The config cannot be replaced: tmp/ is not a directory any more.
    os.rename(root / "tmp", tmp_path / "tmp-away")
    (root / "tmp").write_text("not a directory")
    with pytest.raises(LedgerAccessError, match="raising the ledger's format version from 1 to 2"):
        store.objects.put_bytes(os.urandom(ALIGN_MIN), compress=False)
    assert _config(root)["version"] == 1
