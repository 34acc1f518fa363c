"""push / pull of a recorded run's inputs through a path remote, against copying the same files
with fsspec (what `aws s3 sync`-style tools do: list, copy what differs), and a second push of
the same runs, which must send nothing.

The same over a real S3 server on loopback (SeaweedFS) is bench/bench_remote_s3.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import Row

FILE = 16 << 20


def _ledger(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(repo)}
    return subprocess.run(
        [sys.executable, "-m", "ledger", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )


def run(quick: bool) -> list[Row]:
    import fsspec

    total = (128 << 20) if quick else (1 << 30)
    name = "remote: push/pull " + ("128 MiB (quick)" if quick else "1 GiB") + ", path remote"
    tmp = Path(tempfile.mkdtemp(prefix="ledger-bench-remote-", dir="/tmp"))
    try:
        repo = tmp / "repo"
        data = repo / "data"
        data.mkdir(parents=True)
        for i in range(total // FILE):
            (data / f"{i:03d}.bin").write_bytes(os.urandom(FILE))
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        _ledger("init", cwd=repo)
        _ledger("record", "--input", "data", "--", sys.executable, "-c", "pass", cwd=repo)

        fs = fsspec.filesystem("file")
        t = time.perf_counter()
        fs.put(str(data), str(tmp / "copy"), recursive=True)
        copy_up = time.perf_counter() - t
        t = time.perf_counter()
        fs.get(str(tmp / "copy"), str(tmp / "copy-back"), recursive=True)
        copy_down = time.perf_counter() - t

        t = time.perf_counter()
        first = json.loads(_ledger("push", str(tmp / "remote"), "--json", cwd=repo).stdout)
        push = time.perf_counter() - t
        t = time.perf_counter()
        again = json.loads(_ledger("push", str(tmp / "remote"), "--json", cwd=repo).stdout)
        push2 = time.perf_counter() - t
        t = time.perf_counter()
        _ledger("clone", str(tmp / "remote"), str(tmp / "clone"), cwd=tmp)
        pull = time.perf_counter() - t
        gb = total / 1e9
        note = (
            "reference: fsspec put/get of the same files (list, then copy); ledger hashes every "
            "object on the way and runs as a fresh process (start-up included)"
        )
        return [
            Row(name, "fsspec copy up", gb / copy_up, "GB/s", note=note),
            Row(name, "fsspec copy down", gb / copy_down, "GB/s", note=note),
            Row(name, "ledger push", gb / push, "GB/s", "fsspec copy up", push / copy_up),
            Row(
                name, "ledger clone (pull)", gb / pull, "GB/s", "fsspec copy down", pull / copy_down
            ),
            Row(
                name,
                "second push: bytes sent",
                float(again["bytes_sent"]),
                "B",
                f"first push sent {first['bytes_sent']:,} B",
                target="0",
                passed=again["bytes_sent"] == 0,
            ),
            Row(name, "second push: time", push2, "s", "first push", push2 / push),
        ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
