"""``ObjectStore.copy_to`` into real files: a raw object goes kernel to kernel (sendfile), and
a destination sendfile cannot write to (``>>``: an ``O_APPEND`` descriptor) gets the bytes read
and written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from _support import subprocess_env

from ledger.store import Store


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.init(tmp_path / ".ledger")


def test_a_raw_object_lands_at_the_file_position(store: Store, tmp_path: Path) -> None:
    content = os.urandom(5 << 20)  # several sendfile calls
    oid = store.objects.put_bytes(content)
    target = tmp_path / "out.bin"
    with open(target, "wb") as f:
        f.write(b"head")  # the copy starts at the file's position
        assert store.objects.copy_to(oid, f) == len(content)
        f.write(b"tail")
    assert target.read_bytes() == b"head" + content + b"tail"


def test_copy_to_a_file_opened_for_append(store: Store, tmp_path: Path) -> None:
    content = os.urandom(3 << 20)
    oid = store.objects.put_bytes(content)
    target = tmp_path / "log.bin"
    target.write_bytes(b"earlier\n")
    with open(target, "ab") as f:
        assert store.objects.copy_to(oid, f) == len(content)
    assert target.read_bytes() == b"earlier\n" + content


def test_ledger_cat_appends_with_a_shell_redirect(store: Store, tmp_path: Path) -> None:
    """``ledger cat OID >> file``: stdout is an O_APPEND descriptor, which sendfile does not
    write to (EINVAL); the command used to fail there with nothing appended."""
    content = os.urandom(2 << 20)
    oid = store.objects.put_bytes(content)
    target = tmp_path / "all.bin"
    target.write_bytes(b"first\n")
    root = tmp_path / ".ledger"
    cmd = f'"{sys.executable}" -m ledger cat --ledger "{root}" {oid} >> "{target}"'
    done = subprocess.run(
        ["sh", "-c", cmd], env=subprocess_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert target.read_bytes() == b"first\n" + content
