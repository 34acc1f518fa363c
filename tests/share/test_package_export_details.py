"""What `ledger export` writes, member by member (docs/format.md: regular files, mode 0444,
owner 0, mtime 0), that the package is noted as ledger's own output, that the Python API
packages the data by default, and that an export which cannot be put in place leaves no
temporary file behind."""

from __future__ import annotations

import subprocess
from pathlib import Path

from _share_lab import git_env, make_repo, record
from _support import run_ledger
from test_package_import import manifest_of, read_members

from ledger._hashing import hash_bytes
from ledger.share.package import export_package
from ledger.store import Store
from ledger.store.made import made_paths


def test_every_member_is_a_read_only_regular_file_owned_by_0_at_time_0(
    packaged: tuple[Path, str, Path],
) -> None:
    _, _, pkg = packaged
    members = read_members(pkg)
    assert [m.name for m, _ in members[:2]] == ["manifest.json", "README.md"]
    for info, _ in members:
        assert info.isreg(), info.name
        assert (info.mode, info.uid, info.gid, info.mtime) == (0o444, 0, 0, 0), info.name
        assert (info.uname, info.gname) == ("", ""), info.name


def test_an_exported_package_is_noted_as_ledgers_output(packaged: tuple[Path, str, Path]) -> None:
    """Written inside the project, it is not the project's code: `ledger record`'s code
    capture leaves it out (ledger.store.made)."""
    repo, run_id, pkg = packaged
    assert pkg.parent != repo  # the fixture's package is outside the repository
    here = repo / "paper.ledgerpkg"
    r = run_ledger("export", run_id, "-o", str(here), cwd=repo)
    assert r.returncode == 0, r.stderr
    made = {(m.path, m.kind) for m in made_paths(repo / ".ledger")}
    assert (here.absolute(), "package") in made, made
    here.unlink()


def test_the_python_api_packages_the_data_by_default(tmp_path: Path) -> None:
    """An input git ignores travels in the package unless data=False leaves it out."""
    repo = make_repo(tmp_path / "repo")
    (repo / ".gitignore").write_text(".ledger/\nbig.bin\n")
    subprocess.run(["git", "commit", "-qam", "ignore"], cwd=repo, check=True, env=git_env())
    (repo / "big.bin").write_bytes(b"0123456789" * 100)
    run_id = record(repo, "--input", "big.bin")
    big = hash_bytes((repo / "big.bin").read_bytes())
    store = Store.open(repo / ".ledger")
    with_data = export_package(store, [run_id], tmp_path / "with.ledgerpkg")
    without = export_package(store, [run_id], tmp_path / "without.ledgerpkg", data=False)
    assert (with_data.left_out, without.left_out) == (0, 1)
    assert big in manifest_of(read_members(with_data.path))["objects"]  # type: ignore[operator]
    assert big not in manifest_of(read_members(without.path))["objects"]  # type: ignore[operator]


def test_an_export_that_cannot_take_its_place_leaves_no_temporary_file(
    packaged: tuple[Path, str, Path], tmp_path: Path
) -> None:
    """-o names a folder that holds a file: the rename over it fails, the command fails, and
    the temporary package it wrote beside it is removed."""
    repo, run_id, _ = packaged
    target = tmp_path / "taken"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    r = run_ledger("export", run_id, "-o", str(target), cwd=repo)
    assert r.returncode == 2 and r.stderr.startswith("ledger: error: "), r.stdout + r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
    assert (target / "keep.txt").read_text() == "mine"
