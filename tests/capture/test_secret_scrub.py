"""``ledger.capture.secrets`` without a run: known values, encodings, lines, patches."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest

from ledger.capture.secrets import (
    KnownSecret,
    Scrubber,
    detect_line,
    launch_secrets,
    redact_lines,
    redact_patch,
    restore_argv,
    restore_patch_context,
    skipped_secret_file,
)
from ledger.errors import ReplayError
from ledger.store import Store


@pytest.mark.parametrize("prefix", [b"", b"u", b"us", b"user:", b"Authorization: x"])
def test_a_known_value_is_scrubbed_inside_base64_at_any_alignment(prefix: bytes) -> None:
    s = Scrubber([KnownSecret("PASSWORD1", "pw1Zq")])
    encoded = base64.b64encode(prefix + b"pw1Zq" + b"tail")
    out = s.scrub(b"auth " + encoded, "stdout")
    assert b"[REDACTED:PASSWORD1]" in out
    assert encoded not in out and s.hits == {"PASSWORD1": {"stdout"}}


def test_url_encoded_hex_and_short_values() -> None:
    value = "sk-prod+Xy/Zw=9Lq"
    s = Scrubber([KnownSecret("KEY", value), KnownSecret("PIN", "42x")])
    text = f"q={quote(value, safe='')} h={value.encode().hex()} pin 42x".encode()
    out = s.scrub(text, "stdout")
    assert out == b"q=[REDACTED:KEY] h=[REDACTED:KEY] pin [REDACTED:PIN]"
    assert "$PIN (a short value, 3 characters) was scrubbed from stdout" in s.notes()[1]


def test_binary_data_keeps_short_values() -> None:
    s = Scrubber([KnownSecret("PIN", "42x"), KnownSecret("KEY", "longsecret-1")])
    assert s.scrub(b"\0\x0142x longsecret-1", "w.bin") == b"\0\x0142x [REDACTED:KEY]"


def test_launch_secrets_names_content_and_settings() -> None:
    env = {
        "DB_PASSWORD_OLD": "a1",  # short, but a secret name: kept
        "AUTH_ENABLED": "true",  # a setting, not a credential
        "UPSTREAM": "ghp_" + "R8s2Lq0Xv6Tn4Wm1Kb9Pz3Yc7Hd5Jf2Ga8Ne",  # by content
        "HOME": "/root",
        "SSH_AUTH_SOCK": "/tmp",  # a secret name, but an existing path
        "PYTHONPATH": "/tmp/secrets:/tmp",  # "secrets:" reads like an assignment
    }
    argv = ["train.py", "-p", "psh9Kx", "--lr", "0.1", "--pwd", "hunter2"]
    found = {(k.source, k.value) for k in launch_secrets(argv, env)}
    assert found == {
        ("DB_PASSWORD_OLD", "a1"),
        ("UPSTREAM", env["UPSTREAM"]),
        ("argv", "psh9Kx"),
        ("argv", "hunter2"),
    }


@pytest.mark.parametrize(
    ("line", "secret"),
    [
        ("AWS_ACCESS_KEY_ID = 'AKIAZP3MW8QJ5TKD2XRV'", True),
        ("url = postgresql://trainer:pw-55x@db:5432/x", True),
        ("  api_key_2: abcdef", True),
        ("commit 3f786850e387550fdab836ed7e6dc881de23001b", False),
        ("checkpoint b3:" + "9c41" * 16, False),
        ("step 10 loss=0.25 lr: 0.001", False),
    ],
)
def test_detect_line(line: str, secret: bool) -> None:
    assert (detect_line(line) is not None) is secret


def test_private_key_body_is_redacted_line_by_line() -> None:
    data = b"a: 1\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAKCAQ\n-----END RSA PRIVATE KEY-----\n"
    out, found = redact_lines(data, "key.txt")
    assert b"MIIEow" not in out and b"AKCAQ" not in out and out.startswith(b"a: 1\n")
    assert [f.line for f in found] == [2, 3, 4, 5]


def git(repo: Path, *args: str) -> bytes:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@e", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    ).stdout


def test_a_redacted_patch_still_applies_and_keeps_commit_lines(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.py").write_text("x = 1\npassword = 'in-head-Q1'\ny = 2\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "c")
    (repo / "a.py").write_text("x = 1\npassword = 'in-head-Q1'\ny = 3\ntoken = 'added-Z9'\n")
    patch = git(repo, "diff", "HEAD")
    red, found = redact_patch(patch)
    assert b"in-head-Q1" not in red and b"added-Z9" not in red
    assert [(f.where, f.line, f.kept) for f in found] == [("a.py", 2, True), ("a.py", 4, False)]
    git(repo, "checkout", "-q", "--", "a.py")
    fixed = restore_patch_context(red, repo)
    (tmp_path / "p").write_bytes(fixed)
    git(repo, "apply", str(tmp_path / "p"))
    lines = (repo / "a.py").read_text().splitlines()
    assert lines[:3] == ["x = 1", "password = 'in-head-Q1'", "y = 3"]
    assert lines[3].startswith("[REDACTED:")


def test_restore_argv() -> None:
    argv = ["t.py", "--hub-token", "[REDACTED:HUB_TOKEN]"]
    assert restore_argv(argv, {"HUB_TOKEN": "v"}) == ["t.py", "--hub-token", "v"]
    with pytest.raises(ReplayError, match=r"\$HUB_TOKEN, which is not set now"):
        restore_argv(argv, {})
    with pytest.raises(ReplayError, match="given on the command line itself"):
        restore_argv(["t.py", "-p", "***redacted***"], {})


def test_secret_files_setting() -> None:
    assert skipped_secret_file(".env", {}) and skipped_secret_file("a/b/prod.env", {})
    assert skipped_secret_file("certs/server.pem", {}) and skipped_secret_file(".env.local", {})
    assert not skipped_secret_file("envs/train.yaml", {})
    assert not skipped_secret_file(".env", {"LEDGER_SECRET_FILES": ""})
    assert skipped_secret_file("x.cfg", {"LEDGER_SECRET_FILES": "*.cfg, .env"})


def test_plain_snapshot_outside_git_is_redacted_too(tmp_path: Path, store: Store) -> None:
    from ledger.capture.code import snapshot_code
    from ledger.capture.trees import load_tree

    work = tmp_path / "work"
    work.mkdir()
    (work / ".env").write_text("SECRET=plain-dotenv-1\n")
    (work / "train.py").write_text("x = 1\nslack = 'xoxb-2048199231-7731298410-Yq8Kw2'\n")
    (work / "w.bin").write_bytes(b"\0\1" + b"tk4Q" * 4)  # a short known value in binary data
    scrubber = Scrubber([KnownSecret("MY_TOKEN", "tk4Q")])
    snap = snapshot_code(work, store, scrubber=scrubber)
    assert snap.snapshot is not None and snap.redacted == ["train.py:2"]
    tree = load_tree(store, snap.snapshot)
    assert [e.path for e in tree.entries] == ["train.py", "w.bin"]
    files = {e.path: store.objects.get_bytes(e.oid) for e in tree.entries}
    assert b"xoxb" not in files["train.py"] and files["train.py"].startswith(b"x = 1\n")
    assert files["w.bin"] == b"\0\1" + b"tk4Q" * 4  # binary data is not corrupted
    assert any("credential files, never captured" in n and ".env" in n for n in snap.notes)


def test_a_long_line_is_checked_by_the_name_rules_in_linear_time() -> None:
    import time

    from ledger.capture.secrets import MAX_DETECT_LINE

    filler = "checkpoints/model_step_000100.pt " * (MAX_DETECT_LINE // 16)
    start = time.process_time()  # CPU time: a loaded machine does not lengthen it
    assert detect_line("a" * 5_000_000) is None
    assert detect_line(filler) is None
    assert detect_line(filler + "{'api_key': 'zQ8v1kLm'}" + filler) == "name rule"
    assert detect_line(filler + "ghp_" + "R8s2Lq0Xv6Tn4Wm1Kb9Pz3Yc7Hd5Jf2Ga8Ne") == "name rule"
    assert time.process_time() - start < 20.0  # minutes before the cap


def test_restore_patch_context_never_reads_outside_the_checkout(tmp_path: Path) -> None:
    """A crafted stored patch naming ``../outside`` (or a symlink out) gets no line from there."""
    base = tmp_path / "checkout"
    base.mkdir()
    (tmp_path / "outside.txt").write_bytes(b"TOP-SECRET-LINE\n")
    (base / "link.txt").symlink_to(tmp_path / "outside.txt")
    for name in ("../outside.txt", "link.txt", str(tmp_path / "outside.txt")):
        patch = (
            f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n@@ -1,1 +1,2 @@\n"
            " [REDACTED:Secret Keyword]\n+added\n"
        ).encode()
        restored = restore_patch_context(patch, base)
        assert b"TOP-SECRET-LINE" not in restored, name
        assert b"[REDACTED:Secret Keyword]" in restored
