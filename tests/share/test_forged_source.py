"""A package that carries the real raw commit of C but other files for it: import, pull and
verify refuse it, and a replay never runs the other files. Each variant keeps every object
hashing to its name; only git's own ids, recomputed, tell the files are not commit C's."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from _forge import Forge, ledger_state
from _share_lab import SCRIPT, git_env
from _support import init_ledger, run_ledger

Attack = Callable[[Forge, Path, bytes], None]


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=repo, check=True, env=git_env(), capture_output=True)
    return out.stdout.decode().strip()


def _swap_train(f: Forge, forged: bytes, *, executable: bool | None = None) -> dict[str, object]:
    """The source record with ``train.py`` replaced by ``forged`` in its file tree."""
    _, oid = f.ref("sources/git/")
    src = f.json(oid)
    tree = f.json(src["tree"])
    for e in tree["entries"]:
        if e["path"] == "train.py":
            e["oid"], e["size"] = f.put(forged), len(forged)
            if executable is not None:
                e["executable"] = executable
    tree["total_size"] = sum(e["size"] for e in tree["entries"])
    src["tree"] = f.put_json(tree)
    return dict(src)


def _set_source(f: Forge, src: dict[str, object]) -> None:
    name, _ = f.ref("sources/git/")
    f.refs[name] = f.put_json(src)


def _other_tree(f: Forge, repo: Path, forged: bytes) -> None:
    """The attack as found: other files, and a git_tree that matches them."""
    src = _swap_train(f, forged)
    src["git_tree"] = _forged_tree_id(repo, forged)
    _set_source(f, src)


def _other_entry(f: Forge, repo: Path, forged: bytes) -> None:
    """Other files under the real git_tree."""
    _set_source(f, _swap_train(f, forged))


def _other_mode(f: Forge, repo: Path, forged: bytes) -> None:
    """train.py made executable, nothing else changed."""
    _set_source(f, _swap_train(f, SCRIPT.encode(), executable=True))


def _other_raw(f: Forge, repo: Path, forged: bytes) -> None:
    """A raw commit rewritten to name the forged tree (it no longer hashes to C)."""
    src = _swap_train(f, forged)
    tree = _forged_tree_id(repo, forged)
    raw = f.objects[str(src["raw_commit"])]
    src["raw_commit"] = f.put(b"tree " + tree.encode() + raw[raw.index(b"\n") :])
    src["git_tree"] = tree
    _set_source(f, src)


def _forged_tree_id(repo: Path, forged: bytes) -> str:
    """git's id of the commit's tree with train.py replaced (git itself computes it)."""
    copy = repo.parent / f"forged-{repo.name}"
    if not copy.exists():
        _git(repo.parent, "clone", "-q", str(repo), str(copy))
    (copy / "train.py").write_bytes(forged)
    _git(copy, "add", "train.py")
    return _git(copy, "write-tree")


@pytest.mark.parametrize(
    "attack", [_other_tree, _other_entry, _other_mode, _other_raw], ids=lambda a: a.__name__
)
def test_a_forged_carried_commit_is_refused_and_never_runs(
    packaged: tuple[Path, str, Path], tmp_path: Path, attack: Attack
) -> None:
    repo, run_id, pkg = packaged
    mark = tmp_path / "FORGED-CODE-RAN"
    # Prints what the real train.py prints: only running it shows it is not commit C.
    forged = f"open({str(mark)!r}, 'w').write('x')\nprint('epoch 0 loss 3')\n".encode()
    forge = Forge(pkg)
    attack(forge, repo, forged)
    name, _ = forge.ref("sources/git/")
    bad = forge.write(tmp_path / "forged.ledgerpkg")

    review = tmp_path / "review"  # a reviewer with the package alone, no repository
    review.mkdir()
    init_ledger(review)
    before = ledger_state(review / ".ledger")
    r = run_ledger("import", str(bad), cwd=review)
    assert r.returncode == 5, r.stdout + r.stderr
    assert f"{name} is not that commit" in " ".join(r.stderr.split())
    assert ledger_state(review / ".ledger") == before

    # Forced in without the door: verify names it, and replay refuses before running anything.
    forge.force_into(review / ".ledger")
    r = run_ledger("verify", cwd=review)
    assert r.returncode == 1 and f"forged-source: {name}:" in r.stdout, r.stdout
    hidden = tmp_path / "hidden"
    shutil.move(repo, hidden)  # the reviewer's machine: the commit is only in the ledger
    try:
        r = run_ledger("replay", run_id, cwd=review)
    finally:
        shutil.move(hidden, repo)
    assert r.returncode == 7, r.stdout + r.stderr
    assert "is not that commit" in " ".join(r.stderr.split())
    assert not mark.exists()


def test_the_genuine_package_still_replays_from_its_carried_commit(
    packaged: tuple[Path, str, Path], tmp_path: Path
) -> None:
    repo, run_id, pkg = packaged
    review = tmp_path / "review"
    review.mkdir()
    init_ledger(review)
    assert run_ledger("import", str(pkg), cwd=review).returncode == 0
    assert run_ledger("verify", cwd=review).returncode == 0
    hidden = tmp_path / "hidden"
    shutil.move(repo, hidden)
    try:
        r = run_ledger("replay", run_id, cwd=review)
    finally:
        shutil.move(hidden, repo)
    assert r.returncode == 0, r.stdout + r.stderr
