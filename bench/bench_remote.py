"""push / pull of a recorded run's inputs through a path remote, against copying the same files
with fsspec (what `aws s3 sync`-style tools do: list, copy what differs), and a second push of
the same runs, which must send nothing. Each side runs once a round, in an order that
alternates from round to round, each after a ``sync`` (``bench.in_turn``).

The same over a real S3 server on loopback (SeaweedFS) is bench/bench_remote_s3.py."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from . import Row, in_turn

FILE = 16 << 20
ROUNDS = 2  # even: each side goes first as often as the other


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

        def clocked(fn: Callable[[], object]) -> Callable[[], float]:
            def go() -> float:
                t = time.perf_counter()
                fn()
                return time.perf_counter() - t

            return go

        # Rounds, each side once per round in an order that alternates, each after a sync
        # (``bench.in_turn``): every side writes the whole GiB (ledger's with fsyncs), and a
        # fixed order gave the side that ran second a disk whose write budget the first had
        # spent, or the first's dirty pages to write back (bench/__init__.py).
        ups: dict[str, list[float]] = {"copy": [], "push": []}
        downs: dict[str, list[float]] = {"copy": [], "clone": []}
        first: dict[str, object] = {}
        for r in range(ROUNDS):
            copy, remote = tmp / f"copy{r}", tmp / f"remote{r}"

            def push(remote: Path = remote) -> None:
                out = _ledger("push", str(remote), "--json", cwd=repo).stdout
                first.update(json.loads(out))

            got = in_turn(
                r,
                {
                    "copy": clocked(partial(fs.put, str(data), str(copy), recursive=True)),
                    "push": clocked(push),
                },
            )
            for k, v in got.items():
                ups[k].append(v)
            back, clone = tmp / f"copy-back{r}", tmp / f"clone{r}"
            got = in_turn(
                r,
                {
                    "copy": clocked(partial(fs.get, str(copy), str(back), recursive=True)),
                    "clone": clocked(partial(_ledger, "clone", str(remote), str(clone), cwd=tmp)),
                },
            )
            for k, v in got.items():
                downs[k].append(v)
            for p in (copy, back, clone):
                shutil.rmtree(p)
            if r < ROUNDS - 1:
                shutil.rmtree(remote)
        # The second push: to the last round's remote, which holds every object already.
        os.sync()
        t = time.perf_counter()
        again = json.loads(_ledger("push", str(remote), "--json", cwd=repo).stdout)
        push2 = time.perf_counter() - t
        gb = total / 1e9
        med = statistics.median
        copy_up, copy_down = med(ups["copy"]), med(downs["copy"])
        push_s, pull = med(ups["push"]), med(downs["clone"])
        note = (
            "reference: fsspec put/get of the same files (list, then copy; no fsync: its "
            "writes are written back after its clock stops, ledger's before); ledger hashes "
            "every object on the way and runs as a fresh process (start-up included); "
            f"{ROUNDS} rounds, each side once a round in an order that alternates, each after "
            "a `sync` (the disk's write budget: bench/__init__.py); values: medians; ratios: "
            "the median of the rounds' ratios"
        )

        def ratio(mine: list[float], ref: list[float]) -> float:
            return med(a / b for a, b in zip(mine, ref, strict=True))

        return [
            Row(name, "fsspec copy up", gb / copy_up, "GB/s", note=note),
            Row(name, "fsspec copy down", gb / copy_down, "GB/s", note=note),
            Row(
                name,
                "ledger push",
                gb / push_s,
                "GB/s",
                "fsspec copy up",
                ratio(ups["push"], ups["copy"]),
            ),
            Row(
                name,
                "ledger clone (pull)",
                gb / pull,
                "GB/s",
                "fsspec copy down",
                ratio(downs["clone"], downs["copy"]),
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
            Row(name, "second push: time", push2, "s", "first push", push2 / push_s),
        ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
