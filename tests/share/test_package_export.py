"""What `ledger export` writes: the README a reviewer reads, --no-data, bad arguments."""

from __future__ import annotations

import json
from pathlib import Path

from _support import run_ledger
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


def test_no_data_keeps_digests_and_leaves_contents_out(
    packaged: tuple[Path, str, Path], tmp_path: Path
) -> None:
    repo, run_id, _ = packaged
    pkg = tmp_path / "light.ledgerpkg"
    r = run_ledger("export", run_id, "--no-data", "-o", str(pkg), "--json", cwd=repo)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["left_out"] == 1
    members = read_members(pkg)
    manifest = manifest_of(members)
    data = hash_bytes((repo / "data.csv").read_bytes())
    assert data not in manifest["objects"]  # type: ignore[operator]
    assert manifest["left_out"] == [
        {"run_id": run_id, "path": "data.csv", "digest": data, "n_bytes": 6, "fetch": ""}
    ]
    assert "left out (--no-data)" in members[1][1].decode()
    review = tmp_path / "review"
    review.mkdir()
    assert run_ledger("init", cwd=review).returncode == 0
    assert run_ledger("import", str(pkg), cwd=review).returncode == 0
    assert not Store.open(review / ".ledger").objects.has(data)
    r = run_ledger("replay", run_id, cwd=review)
    assert r.returncode == 7 and "cannot restore input data.csv" in r.stderr


def test_export_errors(packaged: tuple[Path, str, Path], tmp_path: Path) -> None:
    repo, run_id, _ = packaged
    r = run_ledger("export", "no-such-run", "-o", str(tmp_path / "x.ledgerpkg"), cwd=repo)
    assert r.returncode == 2 and r.stderr.startswith("ledger: error: ")
    r = run_ledger("export", run_id, "-o", str(tmp_path / "missing" / "x.ledgerpkg"), cwd=repo)
    assert r.returncode == 2 and "cannot write" in r.stderr
    assert not (tmp_path / "x.ledgerpkg").exists()
