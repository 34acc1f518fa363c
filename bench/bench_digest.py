"""Digest of a many-small-files dataset: ledger cold and warm vs ``dvc add`` / ``dvc status``
on the same data in a real DVC repository, in the same run (DVC's slow case, dvc#7166)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import Row, drop_page_cache, median_time

NAME = "digest: 5,000 files x 40 kB"
SIZE = 40_000


def _dataset(root: Path, n: int) -> None:
    for i in range(n):
        d = root / f"{i // 100:03d}"
        d.mkdir(parents=True, exist_ok=True)
        with open(d / f"{i:05d}.bin", "wb") as f:
            f.write(os.urandom(SIZE))
            os.fsync(f.fileno())


def _dvc(args: list[str], cwd: Path) -> float:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "dvc", *args], cwd=cwd, env=env, check=True, capture_output=True
    )
    return time.perf_counter() - t


def _python_start() -> float:
    return median_time(lambda: subprocess.run([sys.executable, "-c", "pass"], check=True), 3)


def run(quick: bool) -> list[Row]:
    from ledger.capture.data import digest_input, manifest_data, store_inputs
    from ledger.capture.statcache import RACY_WINDOW_NS, StatCache
    from ledger.store import Store

    n = 1000 if quick else 5000
    name = NAME if not quick else f"digest: {n:,} files x 40 kB (quick)"
    tmp = Path(tempfile.mkdtemp(prefix="ledger-bench-digest-", dir="/tmp"))
    try:
        plain, repo = tmp / "plain" / "data", tmp / "repo"
        _dataset(plain, n)
        shutil.copytree(plain, repo / "data")
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        _dvc(["init", "-q"], repo)
        made = time.time()

        drop_page_cache(repo / "data")
        dvc_add = _dvc(["add", "-q", "data"], repo)
        dvc_status = min(_dvc(["status", "-q"], repo) for _ in range(2))

        # The racy guard refuses to cache files younger than its window: wait it out.
        time.sleep(max(0.0, made + RACY_WINDOW_NS / 1e9 + 0.2 - time.time()))
        cache_file = tmp / "stat-cache.v1"

        def fresh() -> None:
            cache_file.unlink(missing_ok=True)
            drop_page_cache(plain)

        def cold(workers: int | None = None) -> None:
            cache = StatCache.load(cache_file)
            digest_input(plain, cache, dvc=False, workers=workers)
            cache.save()

        cold_s = median_time(cold, 3, setup=fresh)
        cold1_s = median_time(lambda: cold(1), 3, setup=fresh)
        hot_s = median_time(cold, 3, setup=lambda: cache_file.unlink(missing_ok=True))
        cold()  # leave a saved cache for the warm runs

        def warm_new_process() -> None:
            cache = StatCache.load(cache_file)
            digest_input(plain, cache, dvc=False)
            assert cache.stats.hashed == 0

        warm_s = median_time(warm_new_process, 5)

        def warm_with_listing() -> None:
            cache = StatCache.load(cache_file)
            assert manifest_data(digest_input(plain, cache, dvc=False)) is not None

        listing_s = median_time(warm_with_listing, 5)
        same = StatCache.load(cache_file)
        digest_input(plain, same, dvc=False)
        recheck_s = median_time(lambda: digest_input(plain, same, dvc=False), 5)

        def read_and_hash() -> None:
            from ledger._hashing import hash_bytes

            for d, _, files in os.walk(plain):
                for f in files:
                    with open(os.path.join(d, f), "rb") as fh:
                        hash_bytes(fh.read())

        raw_s = median_time(read_and_hash, 3)

        t = time.perf_counter()
        d = digest_input(repo / "data", StatCache(), dvc=True)
        with_dvc_s = time.perf_counter() - t
        assert d.dvc is not None and d.dvc.matches

        store: list[Store] = []

        def new_store() -> None:
            shutil.rmtree(tmp / "ledger", ignore_errors=True)
            store[:] = [Store.init(tmp / "ledger")]

        def put_all() -> None:
            report = store_inputs(
                [digest_input(plain, StatCache.load(cache_file), dvc=False)], store[0]
            )
            assert report.stored == n and not report.changed

        store_s = median_time(put_all, 3, setup=new_store)
        py = _python_start()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    mb = n * SIZE / 1e6
    speedup = dvc_add / cold_s
    return [
        Row(
            name,
            "`dvc add` (CLI, page cache dropped)",
            dvc_add,
            "s",
            note=(
                f"dataset: {n:,} random files of 40 kB ({mb:.0f} MB), 100 to a folder, "
                f"in {n // 100} folders"
            ),
        ),
        Row(
            name,
            "`dvc status`, unchanged (CLI)",
            dvc_status,
            "s",
            note=(f"DVC times are whole CLI runs; a bare `python -c pass` takes {py:.2f} s here"),
        ),
        Row(
            name,
            "ledger cold digest (empty stat cache, page cache dropped, + cache save)",
            cold_s,
            "s",
            "`dvc add`",
            speedup,
            "≥ 10× faster than `dvc add`",
            speedup >= 10,
            "cold: stat cache empty and the files evicted with posix_fadvise(DONTNEED) "
            "before each run, for ledger and DVC alike; ledger times: median of 3-5 runs",
        ),
        Row(
            name,
            "ledger cold digest, 1 thread",
            cold1_s,
            "s",
            "ledger cold (default threads)",
            cold1_s / cold_s,
        ),
        Row(name, "ledger cold digest, page cache warm", hot_s, "s", "ledger cold", hot_s / cold_s),
        Row(
            name,
            "ledger warm re-digest, stat cache loaded from disk (a new `ledger record`)",
            warm_s,
            "s",
            "ledger cold",
            warm_s / cold_s,
            "< 5% of cold",
            warm_s / cold_s < 0.05,
            "warm: the stat cache's tree memo matches, so the walk (one lstat per file) is the "
            "work; the data-manifest is not built then: `store_inputs` builds it after launch",
        ),
        Row(
            name,
            "ledger warm re-digest from disk + building the data-manifest",
            listing_s,
            "s",
            "ledger cold",
            listing_s / cold_s,
        ),
        Row(
            name,
            "ledger warm re-digest, same process (the after-exit recheck)",
            recheck_s,
            "s",
            "ledger cold",
            recheck_s / cold_s,
            "< 5% of cold",
            recheck_s / cold_s < 0.05,
        ),
        Row(
            name,
            "`dvc status` vs ledger warm (disk cache)",
            dvc_status,
            "s",
            "ledger warm",
            dvc_status / warm_s,
        ),
        Row(
            name,
            "read + BLAKE3 of every file in Python (page cache warm)",
            raw_s,
            "s",
            "ledger cold, page cache warm",
            raw_s / hot_s,
        ),
        Row(
            name,
            "ledger digest with DVC md5 + status (imports dvc)",
            with_dvc_s,
            "s",
            "ledger cold",
            with_dvc_s / cold_s,
        ),
        Row(
            name,
            "store_inputs: copy all files into a new store",
            store_s,
            "s",
            "ledger cold",
            store_s / cold_s,
            "≤ 1.5×",
            store_s / cold_s <= 1.5,
            "store_inputs runs after launch, not before it; median of 3, each into a new "
            "store, the files' pages warm from the digests before (every object fsynced)",
        ),
    ]
