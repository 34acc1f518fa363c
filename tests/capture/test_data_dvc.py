"""DVC-tracked inputs, in a real repository made with git and dvc: the record carries DVC's own
md5, equal to the .dvc file's, and says when the workspace no longer matches it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ledger.capture.data import digest_input
from ledger.capture.dvcinfo import find_dvc_root
from ledger.capture.statcache import StatCache

pytestmark = [
    pytest.mark.dvc,
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
]
DVC = [sys.executable, "-m", "dvc"]


def run(cmd: list[str], cwd: Path) -> None:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "GIT_AUTHOR_NAME": "t", "GIT_COMMITTER_NAME": "t"}
    subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dvcrepo")
    (root / "data" / "sub").mkdir(parents=True)
    (root / "data" / "a.csv").write_text("x,y\n1,2\n")
    (root / "data" / "sub" / "b.bin").write_bytes(bytes(range(256)))
    (root / "labels.txt").write_text("cat\ndog\n")
    (root / "plain.txt").write_text("not tracked\n")
    run(["git", "init", "-q"], root)
    run([*DVC, "init", "-q"], root)
    run([*DVC, "add", "-q", "data", "labels.txt"], root)
    return root


def dvc_out(dvcfile: Path) -> dict[str, object]:
    out = yaml.safe_load(dvcfile.read_text())["outs"][0]
    assert isinstance(out, dict)
    return out


def test_tracked_directory_agrees_with_dot_dvc(repo: Path) -> None:
    d = digest_input(repo / "data", StatCache())
    out = dvc_out(repo / "data.dvc")
    assert d.dvc is not None
    assert str(out["md5"]).endswith(".dir")
    assert (d.dvc.md5, d.dvc.nfiles, d.dvc.size) == (out["md5"], out["nfiles"], out["size"])
    assert d.dvc.workspace_md5 == out["md5"] and d.dvc.matches
    assert (d.dvc.source, d.dvc.hash_name, d.dvc.repo_root) == ("data.dvc", "md5", str(repo))
    assert d.n_files == out["nfiles"] and d.n_bytes == out["size"]


def test_tracked_file_agrees_with_dot_dvc(repo: Path) -> None:
    d = digest_input(repo / "labels.txt", StatCache())
    out = dvc_out(repo / "labels.txt.dvc")
    assert d.dvc is not None and d.dvc.md5 == out["md5"] == d.dvc.workspace_md5
    assert d.dvc.matches and d.dvc.nfiles is None


def test_untracked_path_in_a_dvc_repo_has_no_dvc_info(repo: Path) -> None:
    assert find_dvc_root(repo / "plain.txt") == repo
    assert digest_input(repo / "plain.txt", StatCache()).dvc is None


def test_modified_data_is_reported_as_a_mismatch(repo: Path, tmp_path: Path) -> None:
    work = tmp_path / "copy"
    shutil.copytree(repo, work, symlinks=True)
    (work / "data" / "a.csv").write_text("x,y\n1,3\n")
    (work / "labels.txt").unlink()  # dvc links data from its cache: replace, never write through
    (work / "labels.txt").write_text("cat\nbird\n")
    d = digest_input(work / "data", StatCache())
    assert d.dvc is not None and not d.dvc.matches
    assert d.dvc.md5 == dvc_out(work / "data.dvc")["md5"] != d.dvc.workspace_md5
    f = digest_input(work / "labels.txt", StatCache())
    assert f.dvc is not None and not f.dvc.matches


def test_dvc_can_be_left_out(repo: Path) -> None:
    assert digest_input(repo / "data", StatCache(), dvc=False).dvc is None


def test_no_dvc_import_outside_a_dvc_repo(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x")
    code = (
        "import sys; from pathlib import Path\n"
        "from ledger.capture.data import digest_input\n"
        "from ledger.capture.statcache import StatCache\n"
        f"digest_input(Path({str(tmp_path / 'f')!r}), StatCache())\n"
        "assert 'dvc' not in sys.modules and 'dvc_data' not in sys.modules\n"
    )
    repo_root = Path(__file__).resolve().parents[2]
    subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(repo_root)},
        check=True,
        timeout=60,
    )
