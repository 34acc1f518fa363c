"""Objects stored page-aligned (codec ``0x02``) and an older ledger's one-byte-header files
travel through a path remote and a package as content (docs/format.md "Object encoding"): what
arrives is stored by the receiver's own rules, and verifies."""

from __future__ import annotations

import json
import random
from pathlib import Path

from _share_lab import make_repo, record
from _support import init_ledger, run_ledger

from ledger._hashing import hash_bytes
from ledger.store import Store
from ledger.store.objects import ALIGN_MIN, CODEC_RAW, CODEC_RAW_ALIGNED, PAGE
from ledger.store.verify import verify_store

BLOB = random.Random(38).randbytes(ALIGN_MIN + 123)  # incompressible: stored raw, aligned
OLD = random.Random(39).randbytes(3 * ALIGN_MIN)  # stored by hand the old way, below


def _recorded(tmp_path: Path) -> tuple[Path, str]:
    """A ledger with one run whose inputs are an aligned object and an old-layout one."""
    repo = make_repo(tmp_path / "repo")
    (repo / "blob.bin").write_bytes(BLOB)
    (repo / "old.bin").write_bytes(OLD)
    run_id = record(repo, "--input", "blob.bin", "--input", "old.bin")
    store = Store.open(repo / ".ledger")
    path = store.objects.path_of(hash_bytes(OLD))
    assert path.read_bytes()[0] == CODEC_RAW_ALIGNED
    path.chmod(0o644)
    path.write_bytes(b"\x00" + OLD)  # as a ledger before the aligned codec stored it
    return repo, run_id


def _arrived(ledger: Path) -> None:
    store = Store.open(ledger)
    for content in (BLOB, OLD):
        oid = hash_bytes(content)
        data = store.objects.path_of(oid).read_bytes()
        # Stored by the receiver's rules: aligned, whatever layout the sender had.
        assert data[0] == CODEC_RAW_ALIGNED and data[PAGE:] == content
    assert verify_store(store).ok


def test_a_path_remote_holds_content_and_a_clone_stores_it_aligned(tmp_path: Path) -> None:
    repo, _ = _recorded(tmp_path)
    remote = tmp_path / "remote"
    r = run_ledger("push", str(remote), "--json", cwd=repo)
    assert r.returncode == 0, r.stderr
    for content in (BLOB, OLD):  # the remote's file is the content, no header
        digest = hash_bytes(content)[3:]
        assert (remote / "objects" / "b3" / digest[:2] / digest[2:]).read_bytes() == content
    clone = tmp_path / "clone"
    r = run_ledger("clone", str(remote), str(clone), "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    _arrived(clone / ".ledger")
    # A second push finds the remote's copies sound: sizes are of content, not of files.
    again = json.loads(run_ledger("push", str(remote), "--json", cwd=repo).stdout)
    assert again["sent"] == 0 and again["replaced"] == 0
    assert Store.open(repo / ".ledger").objects.path_of(hash_bytes(OLD)).read_bytes()[0] == (
        CODEC_RAW
    )


def test_a_package_carries_content_and_its_import_stores_it_aligned(tmp_path: Path) -> None:
    repo, run_id = _recorded(tmp_path)
    pkg = tmp_path / "run.ledgerpkg"
    r = run_ledger("export", run_id, "-o", str(pkg), "--json", cwd=repo)
    assert r.returncode == 0, r.stderr
    review = tmp_path / "review"
    review.mkdir()
    init_ledger(review)
    r = run_ledger("import", str(pkg), "--json", cwd=review)
    assert r.returncode == 0, r.stderr
    _arrived(review / ".ledger")
