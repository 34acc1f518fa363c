"""What `ledger export` writes: the README a reviewer reads, --no-data, bad arguments."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from _share_lab import git_env, make_repo, record
from _support import init_ledger, run_ledger
from test_package_import import manifest_of, read_members

from ledger._hashing import hash_bytes
from ledger.store import Store


def test_readme_describes_each_run(packaged: tuple[Path, str, Path]) -> None:
    repo, run_id, pkg = packaged
    members = read_members(pkg)
    assert [m.name for m, _ in members[:2]] == ["manifest.json", "README.md"]
    names = [m.name for m, _ in members[2:]]
    assert names == sorted(names) and all(n.startswith("objects/b3/") for n in names)
    readme = members[1][1].decode()
    commit = (repo / ".git" / "refs" / "heads").rglob("*").__next__().read_text().strip()
    data = hash_bytes((repo / "data.csv").read_bytes())
    assert f"## Run `{run_id}`" in readme
    assert "train.py" in readme and f"commit `{commit}` (carried in this package)" in readme
    assert f"input `data.csv`: file, 1 file(s), 6 bytes, digest `{data}`" in readme
    assert "- environment: Python " in readme and "- hardware: " in readme
    assert f"`ledger replay {run_id}`" in readme
    manifest = manifest_of(members)
    assert manifest["runs"] == [run_id]
    assert f"sources/git/{commit}" in manifest["refs"]  # type: ignore[operator]
    assert data in manifest["objects"]  # type: ignore[operator]


def test_no_data_keeps_digests_and_leaves_contents_out(tmp_path: Path) -> None:
    """An ignored input is left out (its digest and size kept); a committed one travels with
    the carried commit that links it, or the package would lack what its records link."""
    repo = make_repo(tmp_path / "repo")
    (repo / ".gitignore").write_text(".ledger/\nbig.bin\n")
    subprocess.run(["git", "commit", "-qam", "ignore"], cwd=repo, check=True, env=git_env())
    (repo / "big.bin").write_bytes(b"0123456789" * 100)
    run_id = record(repo, "--input", "big.bin")
    pkg = tmp_path / "light.ledgerpkg"
    r = run_ledger("export", run_id, "--no-data", "-o", str(pkg), "--json", cwd=repo)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["left_out"] == 1
    members = read_members(pkg)
    manifest = manifest_of(members)
    big = hash_bytes((repo / "big.bin").read_bytes())
    data = hash_bytes((repo / "data.csv").read_bytes())
    assert big not in manifest["objects"]  # type: ignore[operator]
    assert data in manifest["objects"]  # type: ignore[operator]  (a file of the commit)
    assert manifest["left_out"] == [
        {"run_id": run_id, "path": "big.bin", "digest": big, "n_bytes": 1000, "fetch": ""}
    ]
    assert "left out (--no-data)" in members[1][1].decode()
    review = tmp_path / "review"
    review.mkdir()
    init_ledger(review)
    r = run_ledger("import", str(pkg), cwd=review)
    assert r.returncode == 0, r.stderr
    assert not Store.open(review / ".ledger").objects.has(big)
    r = run_ledger("replay", run_id, cwd=review)
    assert r.returncode == 7 and "cannot restore input big.bin" in r.stderr


def test_export_errors(packaged: tuple[Path, str, Path], tmp_path: Path) -> None:
    repo, run_id, _ = packaged
    r = run_ledger("export", "no-such-run", "-o", str(tmp_path / "x.ledgerpkg"), cwd=repo)
    assert r.returncode == 2 and r.stderr.startswith("ledger: error: ")
    r = run_ledger("export", run_id, "-o", str(tmp_path / "missing" / "x.ledgerpkg"), cwd=repo)
    assert r.returncode == 2 and "cannot write" in r.stderr
    assert not (tmp_path / "x.ledgerpkg").exists()


def test_an_object_larger_than_a_read_chunk_travels_whole(tmp_path: Path) -> None:
    """Export sizes each object by reading it in chunks of CHUNK: one of two chunks and a bit
    must be packaged with its whole size and content."""
    from ledger._hashing import CHUNK

    repo = make_repo(tmp_path / "repo")
    (repo / ".gitignore").write_text(".ledger/\nbig.bin\n")
    subprocess.run(["git", "commit", "-qam", "ignore"], cwd=repo, check=True, env=git_env())
    content = os.urandom(2 * CHUNK + 123)
    (repo / "big.bin").write_bytes(content)
    run_id = record(repo, "--input", "big.bin")
    pkg = tmp_path / "big.ledgerpkg"
    r = run_ledger("export", run_id, "-o", str(pkg), cwd=repo)
    assert r.returncode == 0, r.stderr
    oid = hash_bytes(content)
    (member,) = [(m, data) for m, data in read_members(pkg) if m.name.endswith(oid[3:])]
    assert member[0].size == len(content) and member[1] == content


@pytest.mark.parametrize("sorts", ["above", "below"])
def test_export_refuses_a_corrupt_object_whichever_way_its_hash_sorts(
    tmp_path: Path, sorts: str
) -> None:
    """An object whose content no longer hashes to its id is never packaged, whether that
    hash sorts above or below the id: exit 5, the object named, no package written."""
    repo = make_repo(tmp_path / "repo")
    run_id = record(repo)
    store = Store.open(repo / ".ledger")
    oid = hash_bytes((repo / "data.csv").read_bytes())
    path = store.objects.path_of(oid)
    data = path.read_bytes()
    assert data[:1] == b"\x00"  # raw: the content follows the codec byte
    for last in range(256):
        damaged = data[1:-1] + bytes([last])
        got = hash_bytes(damaged)
        if got != oid and (got > oid) == (sorts == "above"):
            break
    path.chmod(0o644)
    path.write_bytes(b"\x00" + damaged)
    pkg = tmp_path / "bad.ledgerpkg"
    r = run_ledger("export", run_id, "-o", str(pkg), cwd=repo)
    assert r.returncode == 5, (r.returncode, r.stderr)
    assert f"object {oid} is corrupt" in r.stderr and "nothing was exported" in r.stderr
    assert not pkg.exists() and not list(tmp_path.glob("*.ledgerpkg*"))
