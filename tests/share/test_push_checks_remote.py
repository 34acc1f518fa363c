"""``push`` checks what the remote holds before it skips an object (issue 36, point 17): a
remote copy of the wrong size (any remote), or, on a path remote, of the right size with
other bytes, is sent again over it, so a teammate's clone then succeeds instead of failing
with exit 5. S3 copies are compared by their listed size only (docs/how-to/share-and-review.md)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from _s3_server import RemoteUnderTest
from _support import run_ledger


def _json(r: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def _damage(remote: RemoteUnderTest, path: str, how: str) -> None:
    if remote.url.startswith("/"):
        Path(path).chmod(0o644)
    data = remote.fs.cat_file(path)
    if how == "longer":
        data += b"x"
    elif how == "shorter":
        data = data[:-1]
    else:  # same size, one byte flipped
        data = data[:-1] + bytes([data[-1] ^ 0x01])
    remote.fs.pipe_file(path, data)


@pytest.mark.parametrize("how", ["longer", "shorter", "flipped"])
def test_push_sends_again_what_the_remote_holds_damaged(
    packaged: tuple[Path, str, Path], tmp_path: Path, remote: RemoteUnderTest, how: str
) -> None:
    if how == "flipped" and not remote.url.startswith("/"):
        pytest.skip("an S3 copy is checked by size only (documented)")
    repo, _, _ = packaged
    first = _json(run_ledger("push", remote.url, "--json", cwd=repo))
    objects = remote.objects()
    assert len(objects) == first["objects"]
    for _, path in sorted(objects.items())[:2]:
        _damage(remote, path, how)
    again = _json(run_ledger("push", remote.url, "--json", cwd=repo))
    remote.sound()  # (on the old code: "partial or corrupt object")
    assert again["replaced"] == 2 and again["sent"] == 2, again
    r = run_ledger("clone", remote.url, str(tmp_path / "clone"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert run_ledger("verify", cwd=tmp_path / "clone").returncode == 0
    # Sound again: the next push checks and sends nothing.
    third = _json(run_ledger("push", remote.url, "--json", cwd=repo))
    assert third["sent"] == 0 and third["replaced"] == 0
