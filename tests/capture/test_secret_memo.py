"""The clean-lines memo: an unchanged environment skips the secret detectors at launch (their
import is most of ``ledger record``'s start-up), and never at the cost of a missed secret."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _support import subprocess_env

from ledger.capture import secret_memo, secrets
from ledger.capture.secret_memo import CleanMemo
from ledger.capture.secrets import launch_secrets

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token's shape
ENV = {"HOME_DIRS": "/nonexistent/one:/nonexistent/two-long-enough", "SOME_ID": TOKEN}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = secrets.detect_line

    def counting(line: str, filename: str = "captured.yaml") -> str | None:
        seen.append(line)
        return real(line, filename)

    monkeypatch.setattr(secrets, "detect_line", counting)
    return seen


def test_clean_lines_are_remembered_and_secrets_never(tmp_path: Path, calls: list[str]) -> None:
    memo = CleanMemo.for_store(tmp_path)
    first = launch_secrets(["python", "train.py", "--lr=0.1-long-enough"], ENV, memo)
    memo.save()
    assert [k.value for k in first] == [TOKEN]
    assert len(calls) == 4  # two variables, two arguments
    calls.clear()
    again = CleanMemo.for_store(tmp_path)  # a new process reads the file
    second = launch_secrets(["python", "train.py", "--lr=0.1-long-enough"], ENV, again)
    assert [k.value for k in second] == [TOKEN]
    assert calls == [f"SOME_ID={TOKEN}"]  # only the secret is looked at again
    stored = (tmp_path / "cache" / secret_memo.MEMO_NAME).read_text()
    assert TOKEN not in stored and "nonexistent" not in stored and "--lr" not in stored


def test_the_memo_is_dropped_when_the_rules_change(
    tmp_path: Path, calls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    memo = CleanMemo.for_store(tmp_path)
    launch_secrets(["python"], ENV, memo)
    memo.save()
    monkeypatch.setattr(secret_memo, "_tag", lambda: "other rules")
    calls.clear()
    launch_secrets(["python"], ENV, CleanMemo.for_store(tmp_path))
    assert len(calls) == 2


def test_a_damaged_memo_is_ignored(tmp_path: Path, calls: list[str]) -> None:
    path = tmp_path / "cache" / secret_memo.MEMO_NAME
    path.parent.mkdir()
    path.write_text("{not json")
    assert [k.value for k in launch_secrets(["x"], ENV, CleanMemo.for_store(tmp_path))] == [TOKEN]
    path.write_text(json.dumps({"tag": secret_memo._tag(), "key": "zz", "clean": []}))
    assert [k.value for k in launch_secrets(["x"], ENV, CleanMemo.for_store(tmp_path))] == [TOKEN]


def test_a_second_record_does_not_import_the_detectors(tmp_path: Path) -> None:
    env = subprocess_env(GIT_CONFIG_NOSYSTEM="1", LEDGER_DIR=str(tmp_path / ".ledger"))
    # Its value names this test, whose name says "secret": the keyword detector flags it, and a
    # flagged line is looked at again on every run (by design).
    env.pop("PYTEST_CURRENT_TEST", None)
    subprocess.run([sys.executable, "-m", "ledger", "init"], cwd=tmp_path, env=env, check=True)
    argv = [sys.executable, "-X", "importtime", "-m", "ledger", "record", "--", "true"]
    for _ in range(2):
        proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
    assert "detect_secrets" not in proc.stderr


def test_the_detector_version_is_read_without_importlib_metadata() -> None:
    """``importlib.metadata`` (with email.*) costs every ``ledger record`` ~20 ms to import:
    the memo's tag reads detect-secrets' version from its dist-info directory's name."""
    code = (
        "import sys\n"
        "from ledger.capture import secret_memo\n"
        "tag = secret_memo._tag()\n"
        "print(secret_memo._detector_version(), 'importlib.metadata' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=subprocess_env(), capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    from importlib.metadata import version

    assert out.stdout.split() == [version("detect-secrets"), "False"]


def test_the_detector_version_falls_back_to_importlib_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installed another way (an egg-info directory, no dist-info), the version still comes
    from the package's metadata; not installed at all, it is ``none``: either way a change of
    detector still changes the memo's tag."""
    egg = tmp_path / "eggs"
    (egg / "detect_secrets-9.8.7.egg-info").mkdir(parents=True)
    (egg / "detect_secrets-9.8.7.egg-info" / "PKG-INFO").write_text(
        "Metadata-Version: 2.1\nName: detect-secrets\nVersion: 9.8.7\n"
    )
    (tmp_path / "bare").mkdir()
    monkeypatch.setattr(sys, "path", [str(egg)])
    assert secret_memo._detector_version() == "9.8.7"
    egg_tag = secret_memo._tag()
    monkeypatch.setattr(sys, "path", [str(tmp_path / "bare")])
    assert secret_memo._detector_version() == "none"
    assert secret_memo._tag() != egg_tag
