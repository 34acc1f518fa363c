"""``ledger report -o DIR`` writes only into a new or empty folder, or one an earlier report
filled and nobody changed since (``ledger.ui.site_folder``): a user's folder survives byte for
byte, whatever it holds, and exit 2 says why."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _support import run_ledger
from _ui_lab import add_run

from ledger.errors import UsageError
from ledger.store import Store
from ledger.ui.site_folder import MARKER, write_site

RUN_A = "20261130T060000.000000Z-0000aaaa"
RUN_B = "20261130T060100.000000Z-0000bbbb"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    store = Store.init(root / ".ledger")
    add_run(store, RUN_A, {"loss": [(0, 1.0), (1, 0.5)]}, name="a", stdout="hello\n")
    add_run(store, RUN_B, {"loss": [(0, 1.0), (1, 0.4)]}, name="b", minute=1)
    return root


def _snapshot(root: Path) -> dict[str, tuple[str, bytes | str, int]]:
    """Every entry under ``root``: kind, bytes (or link target) and mode."""
    out: dict[str, tuple[str, bytes | str, int]] = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(top, name)
            rel = str(path.relative_to(root))
            st = path.lstat()
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path), st.st_mode)
            elif path.is_dir():
                out[rel] = ("dir", b"", st.st_mode)
            else:
                out[rel] = ("file", path.read_bytes(), st.st_mode)
    return out


def _user_folder(folder: Path, outside: Path) -> None:
    """A paper's folder that happens to hold an ``index.html``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "index.html").write_text("<h1>my homepage</h1>\n")
    (folder / "thesis.tex").write_text("\\section{Results}\n")
    (folder / "figs").mkdir()
    (folder / "figs" / "plot.png").write_bytes(bytes(range(256)) * 4)
    (folder / "runs").mkdir()
    (folder / "runs" / "notes.html").write_text("mine")
    outside.mkdir(exist_ok=True)
    (outside / "keep.txt").write_text("outside")
    (folder / "link").symlink_to(outside)


def _refused(r: object, folder: Path, before: dict[str, object]) -> None:
    assert r.returncode == 2, r.stderr  # type: ignore[attr-defined]
    assert "ledger: error:" in r.stderr and "ledger: hint:" in r.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in r.stderr  # type: ignore[attr-defined]
    assert _snapshot(folder) == before


def test_a_users_folder_with_an_index_html_survives_byte_for_byte(
    repo: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "paper"
    _user_folder(folder, tmp_path / "outside")
    before = _snapshot(folder)
    r = run_ledger("report", RUN_A, "-o", str(folder), cwd=repo)
    _refused(r, folder, before)
    assert "is not a ledger report" in r.stderr
    assert (tmp_path / "outside" / "keep.txt").read_text() == "outside"


def test_output_dot_in_a_users_folder_removes_nothing(repo: Path, tmp_path: Path) -> None:
    folder = tmp_path / "work"
    _user_folder(folder, tmp_path / "outside")
    ledger = str(repo / ".ledger")
    before = _snapshot(folder)
    r = run_ledger("-L", ledger, "report", RUN_A, "-o", ".", cwd=folder)
    _refused(r, folder, before)


def test_a_copied_marker_does_not_make_a_users_folder_replaceable(
    repo: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    assert run_ledger("report", RUN_A, "-o", str(site), cwd=repo).returncode == 0
    folder = tmp_path / "paper"
    _user_folder(folder, tmp_path / "outside")
    (folder / MARKER).write_bytes((site / MARKER).read_bytes())
    before = _snapshot(folder)
    r = run_ledger("report", RUN_A, "-o", str(folder), cwd=repo)
    _refused(r, folder, before)
    assert "files ledger did not write" in r.stderr


def test_an_earlier_report_with_a_file_added_or_edited_is_kept(repo: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    assert run_ledger("report", RUN_A, "-o", str(site), cwd=repo).returncode == 0
    (site / "my-notes.txt").write_text("reviewer comments")
    before = _snapshot(site)
    r = run_ledger("report", RUN_B, "-o", str(site), cwd=repo)
    _refused(r, site, before)
    assert "my-notes.txt" in r.stderr
    (site / "my-notes.txt").unlink()
    (site / "index.html").write_text("edited by hand")
    before = _snapshot(site)
    r = run_ledger("report", RUN_B, "-o", str(site), cwd=repo)
    _refused(r, site, before)
    assert "changed since ledger wrote them" in r.stderr and "index.html" in r.stderr


def test_a_link_inside_an_earlier_report_is_not_followed(repo: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    assert run_ledger("report", RUN_A, "-o", str(site), cwd=repo).returncode == 0
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / f"{RUN_A}.html").write_text("not a report page")
    for p in (site / "runs").iterdir():
        p.unlink()
    (site / "runs").rmdir()
    (site / "runs").symlink_to(victim)
    before, victim_before = _snapshot(site), _snapshot(victim)
    r = run_ledger("report", RUN_B, "-o", str(site), cwd=repo)
    _refused(r, site, before)
    assert _snapshot(victim) == victim_before


def test_a_file_or_a_link_given_as_the_folder_is_refused(repo: Path, tmp_path: Path) -> None:
    file = tmp_path / "report.html"
    file.write_text("a file")
    r = run_ledger("report", RUN_A, "-o", str(file), cwd=repo)
    assert r.returncode == 2 and "is not a folder" in r.stderr
    assert file.read_text() == "a file"
    empty = tmp_path / "empty"
    empty.mkdir()
    link = tmp_path / "link"
    link.symlink_to(empty)
    r = run_ledger("report", RUN_A, "-o", str(link), cwd=repo)
    assert r.returncode == 2 and "is not a folder" in r.stderr
    assert link.is_symlink() and not any(empty.iterdir())


def test_new_empty_and_earlier_report_folders_are_written(repo: Path, tmp_path: Path) -> None:
    empty = tmp_path / "here"
    empty.mkdir()
    ledger = str(repo / ".ledger")
    r = run_ledger("-L", ledger, "report", RUN_A, "-o", ".", cwd=empty)
    assert r.returncode == 0, r.stderr
    assert (empty / "index.html").is_file() and (empty / MARKER).is_file()
    assert (empty / "runs" / f"{RUN_A}.html").is_file()
    # Replaced whole by the next report; no hidden build folder is left behind.
    r = run_ledger("-L", ledger, "report", RUN_B, "-o", ".", cwd=empty)
    assert r.returncode == 0, r.stderr
    assert not (empty / "runs" / f"{RUN_A}.html").exists()
    assert not (empty / "logs").exists()  # run A's log went with it
    assert (empty / "runs" / f"{RUN_B}.html").is_file()
    assert not [p for p in empty.iterdir() if p.name.startswith(".ledger-site-")]
    nested = tmp_path / "a" / "b" / "site"
    assert run_ledger("report", RUN_A, "-o", str(nested), cwd=repo).returncode == 0
    assert (nested / "index.html").is_file()


def test_a_failed_write_leaves_the_earlier_report_as_it_was(tmp_path: Path) -> None:
    site = tmp_path / "site"

    def build(folder: Path) -> None:
        (folder / "index.html").write_text("first")

    write_site(site, build)
    before = _snapshot(site)

    def broken(folder: Path) -> None:
        (folder / "index.html").write_text("half")
        raise UsageError("the second report failed")

    with pytest.raises(UsageError):
        write_site(site, broken)
    assert _snapshot(site) == before
    with pytest.raises(UsageError):
        write_site(tmp_path / "new", broken)
    assert not (tmp_path / "new").exists()
