"""`ledger verify-attestation` reads at most 64 MiB of an envelope (``attest/check.py``'s
``MAX_ENVELOPE``): a file one byte over is refused by its size, before it is parsed."""

from __future__ import annotations

import os
from pathlib import Path

from _support import init_ledger, run_ledger

from ledger.attest import generate_key

MIB = 2**20


def test_an_envelope_one_byte_over_64_mib_is_refused_by_its_size(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    init_ledger(project)
    pub, _ = generate_key(tmp_path / "keys" / "signing.pem")
    envelope = tmp_path / "att.json"
    with open(envelope, "wb") as f:  # sparse: the file a runaway writer left, all zero bytes
        f.truncate(64 * MIB + 1)
    r = run_ledger("verify-attestation", str(envelope), "--key", str(pub), cwd=project)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"is larger than {64 * MIB} bytes" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    os.truncate(envelope, 64 * MIB)  # at the cap it is read, and refused as not JSON
    r = run_ledger("verify-attestation", str(envelope), "--key", str(pub), cwd=project)
    assert r.returncode == 2 and "is not JSON" in r.stderr, r.stderr
    assert "larger than" not in r.stderr
