"""The 64 MiB limit on scanning a log line by line (docs/reference/secrets.md): slow (two logs of
64 MiB), so in a file of its own that the mutation run maps last."""

from __future__ import annotations

from pathlib import Path

from ledger.capture.secrets import KnownSecret, Scrubber, scrub_run_dir

STRIPE = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
FILLER = "ab cd ef gh "


def _log_of(size: int, tail: bytes) -> bytes:
    row = (FILLER * 340).encode() + b"\n"
    body = row * ((size - len(tail)) // len(row))
    return body + b"a" * (size - len(tail) - len(body)) + tail


def test_a_log_over_64_mib_is_only_scrubbed_of_known_values(tmp_path: Path) -> None:
    # The limit applies to the log once scrubbed of known values (markers can be longer).
    tail = f"\nkey = {STRIPE}\nmine: known-value-1\n".encode()
    grown = len(b"[REDACTED:MY_TOKEN]") - len(b"known-value-1")
    scrubber = Scrubber([KnownSecret("MY_TOKEN", "known-value-1")])
    (tmp_path / "stdout.log").write_bytes(_log_of((64 << 20) - grown, tail))
    (tmp_path / "stderr.log").write_bytes(_log_of((64 << 20) - grown + 1, tail))
    notes = scrub_run_dir(tmp_path, scrubber)
    out, err = (tmp_path / "stdout.log").read_bytes(), (tmp_path / "stderr.log").read_bytes()
    # At exactly 64 MiB the log is still scanned line by line; one byte more and it is not.
    assert out.endswith(b"\n[REDACTED:Stripe Access Key]\nmine: [REDACTED:MY_TOKEN]\n")
    assert err.endswith(f"\nkey = {STRIPE}\nmine: [REDACTED:MY_TOKEN]\n".encode())
    assert notes[0] == (
        "stderr is over 67,108,864 bytes: only the secrets known at launch were scrubbed from "
        "it, it was not scanned for others"
    )
    assert notes[1].startswith("lines holding secrets were redacted in the logs (2): stdout:")
