"""Many small objects through the doors: a run whose inputs are 20,000 files of ~0.5 kB,
exported, imported into a fresh ledger, pushed to a path remote and cloned from it; each
stated in objects per second, against the store's own batch writer (``put_files``) storing
the same files in the same run (what "at the store's speed" means) and against fsspec
copying them. Before issue 36, import stored each object with its own fsyncs: 30-50
objects/s. The sides run once a round in an order that turns, each after a ``sync``
(``bench.in_turn``)."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from . import Row, in_turn
from .bench_remote import _ledger

ROUNDS = 2  # even: each side goes first as often as the other


def _timed(*args: str, cwd: Path) -> tuple[float, subprocess.CompletedProcess[str]]:
    t = time.perf_counter()
    r = _ledger(*args, cwd=cwd)
    return time.perf_counter() - t, r


def run(quick: bool) -> list[Row]:
    import fsspec

    from ledger.store import Store
    from ledger.store.batch import put_files

    n = 2_000 if quick else 20_000
    name = f"many small objects: {n:,} files of ~0.5 kB" + (" (quick)" if quick else "")
    tmp = Path(tempfile.mkdtemp(prefix="ledger-bench-many-", dir="/tmp"))
    try:
        repo = tmp / "repo"
        data = repo / "data"
        data.mkdir(parents=True)
        for i in range(n):
            (data / f"{i:05d}.txt").write_bytes(os.urandom(128 + i % 256).hex().encode())
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        _ledger("init", cwd=repo)
        r = _ledger("record", "--json", "--input", "data", "--", sys.executable, "-c", "", cwd=repo)
        # (record's --json summary goes to stderr: stdout is the command's)
        run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]

        files = sorted(str(p) for p in data.iterdir())
        fs = fsspec.filesystem("file")
        pkg = tmp / "run.ledgerpkg"
        _ledger("export", run_id, "-o", str(pkg), cwd=repo)
        source = str(tmp / "clone-source")  # what every clone reads, pushed untimed
        _ledger("push", source, "--json", cwd=repo)
        counts: dict[str, int] = {}

        def store(r: int) -> float:  # the reference: the store's batch writer, in-process
            ref = Store.init(tmp / f"reference{r}" / ".ledger")
            t = time.perf_counter()
            put_files(ref.objects, files)
            return time.perf_counter() - t

        def copy(r: int) -> float:
            t = time.perf_counter()
            fs.put(str(data), str(tmp / f"copy{r}"), recursive=True)
            return time.perf_counter() - t

        def import_(r: int) -> float:
            took, out = _timed("import", str(pkg), "--json", cwd=tmp / f"review{r}")
            counts["import"] = json.loads(out.stdout)["objects"]
            return took

        def push(r: int) -> float:
            return _timed("push", str(tmp / f"remote{r}"), "--json", cwd=repo)[0]

        def clone(r: int) -> float:
            took, out = _timed("clone", source, str(tmp / f"clone{r}"), "--json", cwd=tmp)
            counts["clone"] = json.loads(out.stdout)["fetched"]
            return took

        # Rounds, each side once a round in an order that turns, each after a sync
        # (``bench.in_turn``): every side writes 20,000 files (all but fsspec with fsyncs); in a
        # fixed order the reference always ran first, on the disk the others then found
        # spent (the write budget, bench/__init__.py).
        sides = {"store": store, "copy": copy, "import": import_, "push": push, "clone": clone}
        times: dict[str, list[float]] = {k: [] for k in sides}
        for k in range(ROUNDS):
            (tmp / f"review{k}").mkdir()
            _ledger("init", cwd=tmp / f"review{k}")
            got = in_turn(k, {key: partial(fn, k) for key, fn in sides.items()})
            for key, v in got.items():
                times[key].append(v)
        last = str(tmp / f"remote{ROUNDS - 1}")
        os.sync()
        push2_s, _ = _timed("push", last, "--json", cwd=repo)
        objects, fetched = counts["import"], counts["clone"]
        med = statistics.median

        def ratio(key: str, count: int) -> float:
            """Rate over the store's, round by round: the median of the rounds'."""
            return med(s / x * count / n for s, x in zip(times["store"], times[key], strict=True))

        store_s, copy_s = med(times["store"]), med(times["copy"])
        import_s, push_s, clone_s = (med(times[k]) for k in ("import", "push", "clone"))
        note = (
            "each ledger command runs as a fresh process (start-up included) and hashes every "
            "object on the way; the store reference is put_files in the benchmark's process; "
            "a second push reads back and hashes every remote copy it skips (path remote); "
            f"{ROUNDS} rounds, each side once a round into a new destination, in an order that "
            "turns, each after a `sync` (the disk's write budget: bench/__init__.py); values: "
            "medians; ratios: the median of the rounds' ratios"
        )
        ref_name = "store: put_files, same files"
        return [
            Row(name, ref_name, n / store_s, "objects/s", note=note),
            Row(name, "fsspec copy of the files", n / copy_s, "files/s"),
            Row(
                name,
                "ledger import",
                objects / import_s,
                "objects/s",
                ref_name,
                ratio("import", objects),
            ),
            Row(
                name,
                "ledger push (path remote)",
                objects / push_s,
                "objects/s",
                ref_name,
                ratio("push", objects),
            ),
            Row(
                name,
                "ledger clone (pull)",
                fetched / clone_s,
                "objects/s",
                ref_name,
                ratio("clone", fetched),
            ),
            Row(
                name,
                "second push (checks every copy)",
                push2_s,
                "s",
                "first push",
                push2_s / push_s,
            ),
        ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
