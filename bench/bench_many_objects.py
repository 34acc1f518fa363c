"""Many small objects through the doors: a run whose inputs are 20,000 files of ~0.5 kB,
exported, imported into a fresh ledger, pushed to a path remote and cloned from it; each
stated in objects per second, against the store's own batch writer (``put_files``) storing
the same files in the same run (what "at the store's speed" means) and against fsspec
copying them. Before issue 36, import stored each object with its own fsyncs: 30-50
objects/s."""

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
from .bench_remote import _ledger


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

        # The reference: the store's batch writer on the same files, in this process.
        files = sorted(str(p) for p in data.iterdir())
        ref = Store.init(tmp / "reference" / ".ledger")
        t = time.perf_counter()
        put_files(ref.objects, files)
        store_s = time.perf_counter() - t
        fs = fsspec.filesystem("file")
        t = time.perf_counter()
        fs.put(str(data), str(tmp / "copy"), recursive=True)
        copy_s = time.perf_counter() - t

        pkg = tmp / "run.ledgerpkg"
        _ledger("export", run_id, "-o", str(pkg), cwd=repo)
        review = tmp / "review"
        review.mkdir()
        _ledger("init", cwd=review)
        import_s, r = _timed("import", str(pkg), "--json", cwd=review)
        objects = json.loads(r.stdout)["objects"]
        remote = str(tmp / "remote")
        push_s, r = _timed("push", remote, "--json", cwd=repo)
        push2_s, _ = _timed("push", remote, "--json", cwd=repo)
        clone_s, r = _timed("clone", remote, str(tmp / "clone"), "--json", cwd=tmp)
        fetched = json.loads(r.stdout)["fetched"]

        store_rate = n / store_s
        note = (
            "each ledger command runs as a fresh process (start-up included) and hashes every "
            "object on the way; the store reference is put_files in the benchmark's process; "
            "a second push reads back and hashes every remote copy it skips (path remote)"
        )
        ref_name = "store: put_files, same files"
        return [
            Row(name, ref_name, store_rate, "objects/s", note=note),
            Row(name, "fsspec copy of the files", n / copy_s, "files/s"),
            Row(
                name,
                "ledger import",
                objects / import_s,
                "objects/s",
                ref_name,
                store_s / import_s * objects / n,
            ),
            Row(
                name,
                "ledger push (path remote)",
                objects / push_s,
                "objects/s",
                ref_name,
                store_s / push_s * objects / n,
            ),
            Row(
                name,
                "ledger clone (pull)",
                fetched / clone_s,
                "objects/s",
                ref_name,
                store_s / clone_s * fetched / n,
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
