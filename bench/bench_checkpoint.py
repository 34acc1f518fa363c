"""Checkpoint save and load of a float32 state dict against ``torch.save`` + fsync and
``torch.load(weights_only=True)`` of the same state, in the same run.

``run`` returns ``bench.Row`` figures (``python -m bench --only checkpoint``). Peak memory is
measured in child processes (``--child``) as the peak RSS beyond the state itself.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import REST_SECONDS, Row, in_turn, rest, turn_order

NAME = "checkpoint"
N_TENSORS = 50


def _state(total_bytes: int, seed: int = 0) -> dict[str, Any]:
    import torch

    g = torch.Generator().manual_seed(seed)
    numel = total_bytes // 4 // N_TENSORS
    return {f"layer{i}.weight": torch.randn(numel, generator=g) for i in range(N_TENSORS)}


def _torch_save(state: dict[str, Any], path: Path) -> None:
    import torch

    with open(path, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())


def _dcp_async_save(state: dict[str, Any], path: Path) -> tuple[float, Any]:
    """Seconds ``torch.distributed.checkpoint.async_save`` held the caller, and its future."""
    import warnings

    import torch.distributed.checkpoint as dcp

    with warnings.catch_warnings():  # "torch.distributed is ... uninitialized": one process
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        fut = dcp.async_save(state, checkpoint_id=str(path))
        return time.perf_counter() - t, fut


def measure_times(total_bytes: int, rounds: int) -> dict[str, list[float]]:
    """Seconds of each operation in each of ``rounds`` rounds; within a round the operations
    run one after the other on the same state, so every ratio compares neighbours in time."""
    from ledger.store import Store
    from ledger.torch.checkpoint import save_checkpoint
    from ledger.torch.checkpoint.reuse import forget

    state = _state(total_bytes)
    work = Path(tempfile.mkdtemp(prefix="bench-ckpt-"))
    pt = work / "state.pt"
    fresh, inc, incz, trusted, bg = (
        work / n for n in ("fresh", "inc", "inc-zstd", "trusted", "bg")
    )
    for d in (inc, incz, trusted, bg):
        Store.init(d)
    floor = _Floor(work / "floor", state)
    step = [0]

    def save(store: Path, **kw: Any) -> Any:
        step[0] += 1
        return save_checkpoint({"model": state}, step=step[0], store=store, run_id="bench", **kw)

    def touch_tenth() -> None:  # 10% of the tensors change, as between two nearby steps
        for i in range(0, N_TENSORS, 10):
            state[f"layer{i}.weight"].add_(1.0)

    def timed(fn: Any) -> float:
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t

    from ledger._hashing import hash_bytes

    views = [memoryview(t.numpy()).cast("B") for t in state.values()]
    out: dict[str, list[float]] = {}
    infos: list[Any] = []  # what each 90%-unchanged save reported

    def add(key: str, seconds: float) -> None:
        out.setdefault(key, []).append(seconds)

    try:
        save(inc)
        save(incz, compress=True)
        save(trusted, trust_version_counter=True)
        save(bg, background=True).wait()

        def torch_save() -> None:
            pt.unlink(missing_ok=True)
            os.sync()
            add("torch_save", timed(lambda: _torch_save(state, pt)))

        def fresh_save() -> None:
            if fresh.exists():  # its mappings go with it, as a new process would have none
                forget(Store.open(fresh).objects)
            shutil.rmtree(fresh, ignore_errors=True)
            Store.init(fresh)
            os.sync()
            add("ledger_save_fresh", timed(lambda: save(fresh)))

        def default_save() -> None:
            os.sync()
            add("ledger_save_10pct_new", timed(lambda: infos.append(save(inc))))
            add("bytes_new_10pct", float(infos[-1].bytes_new))

        def zstd_save() -> None:
            os.sync()
            add("ledger_save_10pct_new_zstd", timed(lambda: save(incz, compress=True)))

        def trusted_save() -> None:
            os.sync()
            add(
                "ledger_save_10pct_new_trusted",
                timed(lambda: save(trusted, trust_version_counter=True)),
            )

        def background_save() -> None:
            os.sync()
            t = time.perf_counter()
            pending = save(bg, background=True)
            add("background_blocked", time.perf_counter() - t)  # the whole call, wall time
            add("background_total", pending.wait().seconds)

        def dcp_save() -> None:
            dest = work / "dcp"
            shutil.rmtree(dest, ignore_errors=True)
            os.sync()
            blocked, fut = _dcp_async_save(state, dest)
            t = time.perf_counter()
            fut.result()
            add("dcp_async_blocked", blocked)
            add("dcp_async_total", blocked + time.perf_counter() - t)

        def hash_all() -> None:
            add("hash_only", timed(lambda: [hash_bytes(v) for v in views]))

        def floor_save() -> None:  # what the 90%-unchanged save cannot skip (``_Floor``)
            os.sync()
            add("floor", floor.save(state))

        ops = [
            torch_save,
            fresh_save,
            default_save,
            zstd_save,
            trusted_save,
            background_save,
            dcp_save,
            hash_all,
            floor_save,
        ]
        for r in range(rounds):
            touch_tenth()  # what every 90%-unchanged save of this round finds changed
            # The order turns round by round (``bench.turn_order``: rotated, then reversed in
            # the next round) and each timed write starts after a sync: over every two rounds
            # each operation runs after each other one once, so none meets the disk's write
            # budget (bench/__init__.py) more spent than its reference on average, and none
            # always follows the same one (a 400 MB write and delete leaves the disk busy).
            for i in turn_order(r, len(ops)):
                ops[i]()
        _torch_save(state, pt)
        # A load happens once, at resume, in a new process: each is timed in a fresh child, so
        # neither reuses the memory a previous load freed (in one process, glibc hands a
        # freed state back without page faults to whichever load comes next).
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
        for r in range(rounds):
            for op in (("torch-load", "ledger-load")[i] for i in turn_order(r, 2)):
                cmd = [sys.executable, __file__, "--time-load", op, str(pt), str(inc)]
                res = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
                add(op.replace("-", "_"), float(res.stdout))
    finally:
        floor.close()
        shutil.rmtree(work, ignore_errors=True)
    return out


class _Floor:
    """The work a save of a mostly unchanged state cannot skip without trusting a version
    counter, published as atomically as any correct checkpoint must be: compare each
    tensor's bytes with the last save's (``memcmp`` against a read-only mapping of a file in
    the page cache), write + fsync each changed one to a new file (four threads at once, as
    a save's workers; the last save's files stay as they were until the new one is
    published), then make those names durable (one fsync of the folder) while a manifest
    naming every tensor's file is written to a temp file and fsynced, then rename the
    manifest into place and fsync the folder again: the commit point, durable before
    ``save`` returns. Three waits for the disk in a row (the data; the data's names with the
    manifest's content; the manifest's name), where a one-process ledger save has six (the
    chunks; their folders with the shard manifest's and record's contents and the ref
    files' temp copies; the manifest's folder; the record's folder; the log append; the
    refs' folder), which the ledger's own format needs and a floor does not count
    (``_FormatFloor`` counts them). It keeps
    its own files, in its own folder: ``save`` is timed, the rest (mapping the new files,
    deleting the replaced ones) is set-up.
    """

    def __init__(self, folder: Path, state: dict[str, Any]) -> None:
        from ledger.torch.checkpoint.reuse import MEMCMP

        self.folder, self.memcmp = folder, MEMCMP
        folder.mkdir()
        self.maps: dict[str, Any] = {}
        self.files: dict[str, str] = {}  # tensor name -> its file, as the manifest names it
        self.gen = 0
        self.rebase(state)

    def _write(self, file: str, t: Any) -> None:
        with open(self.folder / file, "wb") as f:
            f.write(memoryview(t.numpy()).cast("B"))
            f.flush()
            os.fsync(f.fileno())

    def _map(self, name: str) -> None:
        import mmap

        import numpy as np

        with open(self.folder / self.files[name], "rb") as f:
            # Not MAP_POPULATE, as a save maps the new object of a chunk that changed after
            # a save found it unchanged (``reuse.remember``): filled at once, this floor's
            # save after a replacing one took 0.6-1.1 ms longer (paired medians of 20-30
            # rounds, three runs), so the floor keeps the faster way, its page faults
            # counted in its timed comparison.
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        old = self.maps.pop(name, None)
        if old is not None:
            old[0].close()
        self.maps[name] = (mm, int(np.frombuffer(mm, dtype=np.uint8).ctypes.data))

    def _fsync_folder(self) -> None:
        from ledger.store.atomic import fsync_dir

        fsync_dir(self.folder)

    def _publish(self, files: dict[str, str], pool: Any) -> None:
        """The data's names durable while the manifest's content is, then its name."""
        tmp = self.folder / "manifest.tmp"

        def manifest() -> None:
            with open(tmp, "wb") as f:
                f.write(json.dumps(files, sort_keys=True).encode())
                f.flush()
                os.fsync(f.fileno())

        list(pool.map(lambda fn: fn(), [manifest, self._fsync_folder]))
        tmp.replace(self.folder / "manifest")
        self._fsync_folder()

    def _retire(self, files: dict[str, str]) -> None:
        """Untimed: the new files mapped, the ones they replaced deleted."""
        old, self.files = self.files, files
        for name, file in files.items():
            if old.get(name) != file:
                self._map(name)
                if name in old:
                    (self.folder / old[name]).unlink()

    def rebase(self, state: dict[str, Any]) -> None:
        """Every tensor written through the page cache, published and mapped, untimed: the
        last save a ``save`` compares with (after every tensor was replaced, say)."""
        from concurrent.futures import ThreadPoolExecutor

        self.gen += 1
        files = {name: f"{name}.{self.gen}" for name in state}
        for name, t in state.items():
            self._write(files[name], t)
        with ThreadPoolExecutor(2) as pool:
            self._publish(files, pool)
        self._retire(files)

    def save(self, state: dict[str, Any]) -> float:
        """Seconds to compare every tensor, write + fsync the changed ones and publish."""
        from concurrent.futures import ThreadPoolExecutor

        self.gen += 1
        files = dict(self.files)

        def one(item: tuple[str, Any]) -> None:
            name, t = item
            nbytes = t.numel() * t.element_size()
            if self.memcmp(t.data_ptr(), self.maps[name][1], nbytes) != 0:
                files[name] = f"{name}.{self.gen}"
                self._write(files[name], t)

        t0 = time.perf_counter()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(one, state.items()))
            self._publish(files, pool)
        seconds = time.perf_counter() - t0
        self._retire(files)
        return seconds

    def close(self) -> None:
        for mm, _addr in self.maps.values():
            mm.close()


class _FormatFloor(_Floor):
    """The floor (``_Floor``) and what ledger's format adds to it, which no save in that
    format can skip: each changed tensor hashed (BLAKE3: its object's name) before it is
    written, a record's content and a ref file's temp copy written and fsynced beside the
    manifest's, and after the manifest's name three more waits for the disk in a row, each in
    a folder of its own: the record's name (its folder fsynced), a log line appended
    (fdatasync), the ref file renamed into place (its folder fsynced). Six waits in a row, as a
    one-process ledger save has (``_Floor``'s docstring lists them), and nothing else: no
    chunking, no log tail read, no checks, no lock, no Python record objects. A ledger save
    over this says how much of its distance to the floor is its code, not its format."""

    def _hash(self, t: Any) -> None:
        from ledger._hashing import hash_bytes

        hash_bytes(memoryview(t.numpy()).cast("B"))

    def _write(self, file: str, t: Any) -> None:
        self._hash(t)
        super()._write(file, t)

    def _publish(self, files: dict[str, str], pool: Any) -> None:
        from ledger.store.atomic import fsync_dir

        folders = {k: self.folder / k for k in ("records", "refs")}
        for folder in folders.values():
            folder.mkdir(exist_ok=True)
        body = json.dumps(files, sort_keys=True).encode()
        tmps = {
            "manifest": (self.folder / "manifest.tmp", body),
            "record": (folders["records"] / "record.tmp", b'{"manifest": "%d"}' % self.gen),
            "ref": (folders["refs"] / "latest.tmp", b"%d\n" % self.gen),
        }

        def put(path: Path, data: bytes) -> None:
            with open(path, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())

        jobs = [lambda p=p, d=d: put(p, d) for p, d in tmps.values()] + [self._fsync_folder]
        list(pool.map(lambda fn: fn(), jobs))
        tmps["manifest"][0].replace(self.folder / "manifest")
        self._fsync_folder()
        tmps["record"][0].replace(folders["records"] / f"record.{self.gen}")
        fsync_dir(folders["records"])
        with open(self.folder / "log", "ab") as f:
            f.write(b'{"op": "publish", "new": "%d"}\n' % self.gen)
            f.flush()
            os.fdatasync(f.fileno())
        tmps["ref"][0].replace(folders["refs"] / "latest")
        fsync_dir(folders["refs"])


def _replacing_rounds(
    total_bytes: int, rounds: int, work: Path, first: int = 0
) -> dict[str, list[float]]:
    """Runs in a fresh process (this checkout's ledger, or the baseline's): each round
        replaces every tensor and saves (the *replacing* save), changes a tenth and saves (the
        save *after* it, issue #38's case), changes the same tenth again and saves (steady
        state); torch.save+fsync of the new state and the floor of each of the two later saves
        (``_Floor``) run in the same round, each pair in round order (``in_turn``; rounds numbered
    from ``first``, so two processes together alternate evenly). Seconds per round, and the bytes
    each save wrote."""
    import torch

    from ledger.store import Store
    from ledger.torch.checkpoint import save_checkpoint

    g = torch.Generator().manual_seed(11)
    numel = total_bytes // 4 // N_TENSORS

    def new_state() -> dict[str, Any]:
        return {f"layer{i}.weight": torch.randn(numel, generator=g) for i in range(N_TENSORS)}

    def touch_tenth() -> None:
        for i in range(0, N_TENSORS, 10):
            state[f"layer{i}.weight"].add_(1.0)

    store = Store.init(work / "store")
    state = new_state()
    floor = _Floor(work / "floor", state)
    fmt = _FormatFloor(work / "format-floor", state)
    out: dict[str, list[float]] = {}
    step = [0]

    def timed_save() -> float:
        step[0] += 1
        os.sync()  # (a second one inside ``in_turn``: nothing is dirty by then)
        t = time.perf_counter()
        info = save_checkpoint({"model": state}, step=step[0], store=store, run_id="bench")
        seconds = time.perf_counter() - t
        out.setdefault("bytes_new", []).append(float(info.bytes_new))
        return seconds

    def add(key: str, seconds: float) -> None:
        out.setdefault(key, []).append(seconds)

    def torch_save() -> float:
        t = time.perf_counter()
        _torch_save(state, work / "state.pt")
        return time.perf_counter() - t

    def floor_save() -> float:
        return floor.save(state)

    def format_save() -> float:
        return fmt.save(state)

    timed_save()
    timed_save()  # the steady state before the first replacement: nothing changed
    try:
        for r in range(first, first + rounds):
            # Each pair in an order that alternates from round to round, each side after a
            # sync (``bench.in_turn``): the side that went second met the disk's write budget
            # more spent (bench/__init__.py), by position, not by code.
            state = new_state()
            got = in_turn(r, {"torch_save": torch_save, "replacing": timed_save})
            floor.rebase(state)
            fmt.rebase(state)
            touch_tenth()
            sides = {"floor_after": floor_save, "format_after": format_save, "after": timed_save}
            got |= in_turn(r, sides)
            touch_tenth()
            sides = {"floor_steady": floor_save, "format_steady": format_save}
            got |= in_turn(r, {**sides, "steady": timed_save})
            for key, seconds in got.items():
                add(key, seconds)
    finally:
        floor.close()
        fmt.close()
    return out


def _time_load(op: str, pt: Path, store: Path) -> float:
    """Runs in a fresh process: seconds of one load of the bench's state, imports excluded."""
    import torch

    from ledger.torch.checkpoint import load_checkpoint

    t = time.perf_counter()
    if op == "torch-load":
        torch.load(pt, weights_only=True)
    else:
        load_checkpoint(store=store, run_id="bench")
    return time.perf_counter() - t


def _rss_now() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class _PeakRss:
    """Samples resident memory every millisecond in a thread; ``peak`` is the highest seen."""

    def __enter__(self) -> _PeakRss:
        import threading

        self.peak = _rss_now()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.001):
            self.peak = max(self.peak, _rss_now())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_now())


def _child(op: str, total_bytes: int, work: Path) -> dict[str, float]:
    """Runs in a fresh process: peak RSS of one operation beyond the state it handles."""
    import torch

    from ledger.store import Store
    from ledger.torch.checkpoint import load_checkpoint, save_checkpoint

    state = None if op.endswith("load") else _state(total_bytes)
    base = _rss_now()
    blocked = 0.0
    t = time.perf_counter()
    with _PeakRss() as rss:
        if op == "torch-load":
            state = torch.load(work / "state.pt", weights_only=True)
        elif op == "ledger-load":
            state = load_checkpoint(store=work / ".ledger", run_id="bench").state
        elif op == "torch-save":
            _torch_save(state or {}, work / "state.pt")
        elif op == "ledger-save-background":
            store = Store.init(work / ".ledger-bg")
            pending = save_checkpoint(
                {"model": state}, step=1, store=store, run_id="bench", background=True
            )
            pending.wait()
            blocked = pending.blocked_seconds
        elif op == "ledger-save-again":  # a second save compares with the mapped objects
            store = Store.init(work / ".ledger-again")
            save_checkpoint({"model": state}, step=1, store=store, run_id="bench")
            for i in range(0, N_TENSORS, 10):
                (state or {})[f"layer{i}.weight"].add_(1.0)
            save_checkpoint({"model": state}, step=2, store=store, run_id="bench")
        else:
            store = Store.init(work / ".ledger")
            save_checkpoint({"model": state}, step=1, store=store, run_id="bench")
    seconds = time.perf_counter() - t
    loaded = total_bytes if op.endswith("load") else 0  # a load allocates the state itself
    return {
        "seconds": seconds,
        "blocked": blocked,
        "beyond_state_bytes": max(0, rss.peak - base - loaded),
    }


MEMORY_OPS = (
    "torch-save",
    "ledger-save",
    "ledger-save-again",
    "ledger-save-background",
    "torch-load",
    "ledger-load",
)


def measure_memory(total_bytes: int) -> dict[str, dict[str, float]]:
    """Peak RSS beyond the state (and seconds), per operation, each in its own process."""
    work = Path(tempfile.mkdtemp(prefix="bench-ckpt-mem-"))
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    out: dict[str, dict[str, float]] = {}
    try:
        for op in MEMORY_OPS:
            cmd = [sys.executable, __file__, "--child", op, str(total_bytes), str(work)]
            res = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
            out[op] = json.loads(res.stdout)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def _first_background(total_bytes: int, work: Path, r: int) -> dict[str, float]:
    """Runs in a fresh process: the time the first background save of the process holds the
    caller, and torch.save+fsync of the same state, in round ``r``'s order (``in_turn``:
    they alternate from round to round, each after a `sync`). Whichever goes second meets
    the disk after the other's 400 MB (the write budget, bench/__init__.py): with the save
    always first, torch.save always met the spent disk and the ratio flattered the save."""
    import torch  # noqa: F401  (imported before timing, as by any training script)

    from ledger.store import Store
    from ledger.torch.checkpoint import save_checkpoint

    state = _state(total_bytes)
    store = Store.init(work / ".ledger")

    def background() -> float:
        t = time.perf_counter()
        pending = save_checkpoint(
            {"model": state}, step=1, store=store, run_id="bench", background=True
        )
        blocked = time.perf_counter() - t
        for i in range(0, N_TENSORS, 10):  # training goes on at once: 10% of tensors change
            state[f"layer{i}.weight"].add_(1.0)
        pending.wait()  # its writes done before the other side starts
        return blocked

    def torch_save() -> float:
        t = time.perf_counter()
        _torch_save(state, work / "state.pt")
        return time.perf_counter() - t

    return in_turn(r, {"blocked": background, "torch_save": torch_save})


def measure_first_background(total_bytes: int, rounds: int) -> dict[str, dict[str, list[float]]]:
    """``_first_background`` in ``rounds`` fresh processes for this checkout and as many for
    the baseline revision (``LEDGER_BENCH_BASELINE``) when set, alternating, each process
    after the previous one's files are deleted and a rest (``bench.rest``), so each starts on
    an equally rested disk: {which: figures}."""
    from bench import baseline_checkout

    tmp = Path(tempfile.mkdtemp(prefix="bench-ckpt-firstbg-"))
    here = str(Path(__file__).resolve().parents[1])
    cases = [("now", here)]
    try:
        base = baseline_checkout(tmp / "baseline")
        if base is not None:
            cases.append((f"at {base[0]} (before)", f"{base[1]}:{here}"))
        out: dict[str, dict[str, list[float]]] = {}
        for r in range(rounds):
            for i in turn_order(r, len(cases)):
                which, path = cases[i]
                work = tmp / "work"
                rest(work)
                work.mkdir()
                env = dict(os.environ, PYTHONPATH=path)
                cmd = [sys.executable, __file__, "--first-background", str(total_bytes)]
                res = subprocess.run(
                    [*cmd, str(work), str(r)], env=env, check=True, capture_output=True, text=True
                )
                for key, value in json.loads(res.stdout).items():
                    out.setdefault(which, {}).setdefault(key, []).append(value)
            shutil.rmtree(tmp / "work", ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def measure_replacing(total_bytes: int, rounds: int) -> dict[str, dict[str, list[float]]]:
    """``_replacing_rounds`` in a fresh process for this checkout, and for the baseline
    revision (``LEDGER_BENCH_BASELINE``) when set, in alternating order, twice: {which: the
    figures of both processes, round after round}."""
    from bench import baseline_checkout

    tmp = Path(tempfile.mkdtemp(prefix="bench-ckpt-replace-"))
    here = str(Path(__file__).resolve().parents[1])
    cases = [("now", here)]
    try:
        base = baseline_checkout(tmp / "baseline")
        if base is not None:
            cases.append((f"at {base[0]} (before)", f"{base[1]}:{here}"))
        out: dict[str, dict[str, list[float]]] = {}
        half = max(1, rounds // 2)
        for order, first, part in ((cases, 0, half), (cases[::-1], half, rounds - half)):
            for which, path in order:
                work = tmp / "work"
                rest(work)  # every process starts on an equally rested disk
                work.mkdir()
                env = dict(os.environ, PYTHONPATH=path)
                cmd = [sys.executable, __file__, "--replacing", str(total_bytes), str(part)]
                cmd += [str(work), str(first)]
                res = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
                for key, values in json.loads(res.stdout).items():
                    out.setdefault(which, {}).setdefault(key, []).extend(values)
        shutil.rmtree(tmp / "work", ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def _row(what: str, value: float, unit: str, **kw: Any) -> Row:
    return Row(NAME, what, value, unit, **kw)


ROUNDS = 8  # even: over every two rounds each operation runs after each other once
REPLACING_ROUNDS = 6
FIRST_BG_ROUNDS = 4
FLOOR = "floor: memcmp the unchanged, write + fsync the changed, publish a manifest"
FORMAT_FLOOR = (
    "the format's floor: the floor, each changed tensor hashed, and a record, a log line and a "
    "ref made durable after the manifest, one after the other"
)


def _replacing_rows(quick: bool, ratio_row: Any) -> list[Row]:
    """Issue #38's case: the save after one that replaced every tensor, and the steady state
    after it, each over its floor, in fresh processes (this checkout, and the baseline's in
    the same run when ``LEDGER_BENCH_BASELINE`` is set)."""
    total = (20 if quick else 200) * 1_000_000
    figures = measure_replacing(total, REPLACING_ROUNDS)
    note = (
        f"{total // 1_000_000} MB fp32, {N_TENSORS} tensors, in a fresh process (two, one after "
        "the other, with the baseline's in between when it is measured, each after "
        f"{REST_SECONDS} s of rest); each round replaces every tensor and saves, then adds 1 to "
        "the same 10% of the tensors before each of the next two saves; each save and its "
        "reference (torch.save+fsync, or the floor on the same state over its own files) in "
        "an order that alternates from round to round, each after a `sync` (the disk's write "
        "budget: bench/__init__.py); ratio: median of the rounds' ratios"
    )
    rows: list[Row] = []
    for which, f in figures.items():
        label = "" if which == "now" else f" {which}"
        rows += [
            ratio_row(
                f"save after a save that replaced every tensor, 10% changed{label}",
                "after",
                FLOOR,
                "floor_after",
                1.3 if which == "now" else None,
                note,
                f,
            ),
            ratio_row(
                f"save after a save that replaced every tensor, over the format's floor{label}",
                "after",
                FORMAT_FLOOR,
                "format_after",
                None,
                note,
                f,
            ),
            ratio_row(
                f"the format's floor over the floor, after a replacing save{label}",
                "format_after",
                FLOOR,
                "floor_after",
                None,
                note,
                f,
            ),
            ratio_row(
                f"the save that replaced every tensor{label}",
                "replacing",
                "torch.save+fsync",
                "torch_save",
                None,
                note,
                f,
            ),
            ratio_row(
                f"save, 90% unchanged, the same 10% changed again{label}",
                "steady",
                FLOOR,
                "floor_steady",
                1.3 if which == "now" else None,
                note,
                f,
            ),
            ratio_row(
                f"save, 90% unchanged, the same 10% changed again, over the format's floor{label}",
                "steady",
                FORMAT_FLOOR,
                "format_steady",
                None,
                note,
                f,
            ),
        ]
    return rows


def run(quick: bool) -> list[Row]:
    import statistics

    import torch

    total = (40 if quick else 400) * 1_000_000
    mb = f"{total // 1_000_000} MB fp32, {N_TENSORS} tensors"
    t = measure_times(total, rounds=ROUNDS)
    mem = measure_memory(total)
    tensor_mib = total / N_TENSORS / 2**20

    def ratio_row(
        what: str,
        key: str,
        ref: str,
        ref_key: str,
        limit: float | None,
        note: str = "",
        figures: dict[str, list[float]] | None = None,
    ) -> Row:
        """``note`` replaces the section's common note for this row; ``figures`` the
        section's own (``t``)."""
        f = t if figures is None else figures
        med = {k: statistics.median(v) for k, v in f.items()}
        # Each round's figure over the same round's reference, then the median of those.
        ratios = [a / b for a, b in zip(f[key], f[ref_key], strict=True)]
        r = statistics.median(ratios)
        return _row(
            what,
            med[key],
            "s",
            reference=f"{ref} {med[ref_key]:.3f} s; rounds {min(ratios):.2f}-{max(ratios):.2f}x",
            ratio=r,
            target="" if limit is None else f"<= {limit}x",
            passed=None if limit is None else r <= limit,
            note=note
            or f"{mb}; each ratio: the median over {len(ratios)} interleaved rounds of the "
            "round's figure over the same round's reference (range shown after it); in each "
            "round 10% of the tensors change first, then the operations run in an order that "
            "turns from round to round (rotated, then reversed: over two rounds each runs after "
            "each other once, as the disk's write budget asks, bench/__init__.py), each timed "
            "write after a `sync`; a background save "
            "holds one copy of the state in staging buffers kept between saves (peak RSS rows)",
        )

    ts = "torch.save+fsync"
    rows = [
        ratio_row("save, fresh store", "ledger_save_fresh", ts, "torch_save", 1.1),
        ratio_row("save, 90% of tensors unchanged", "ledger_save_10pct_new", ts, "torch_save", 0.2),
        ratio_row(
            "save, 90% of tensors unchanged, over its floor",
            "ledger_save_10pct_new",
            FLOOR,
            "floor",
            1.3,
        ),
        ratio_row(
            "save, 90% unchanged, compress=True (every chunk zstd makes 10% smaller, "
            "the default until now)",
            "ledger_save_10pct_new_zstd",
            ts,
            "torch_save",
            None,
        ),
        ratio_row(
            "save, 90% unchanged, trust_version_counter=True",
            "ledger_save_10pct_new_trusted",
            ts,
            "torch_save",
            0.2,
        ),
        ratio_row(
            "time the caller is blocked by save_checkpoint(background=True)",
            "background_blocked",
            ts,
            "torch_save",
            0.1,
        ),
        ratio_row(
            f"anchor: time the caller is blocked by torch {torch.__version__.split('+')[0]} "
            "torch.distributed.checkpoint.async_save",
            "dcp_async_blocked",
            ts,
            "torch_save",
            None,
        ),
        ratio_row(
            "background save, call to published (its real duration)",
            "background_total",
            ts,
            "torch_save",
            None,
        ),
        ratio_row(
            "anchor: torch.distributed.checkpoint.async_save, call to done",
            "dcp_async_total",
            ts,
            "torch_save",
            None,
        ),
        ratio_row(
            "load (verified)",
            "ledger_load",
            "torch.load(weights_only=True)",
            "torch_load",
            1.0,
            note=f"{mb}; median over {ROUNDS} rounds of the round's ratio; each load in a "
            "fresh process (its imports not timed), as at a resume, the two in alternating "
            "order, the files' pages cached",
        ),
        ratio_row(
            "BLAKE3 of the whole state (part of every save)", "hash_only", ts, "torch_save", None
        ),
    ]
    rows.extend(_replacing_rows(quick, ratio_row))
    first = measure_first_background(total, FIRST_BG_ROUNDS)
    for k, (which, f) in enumerate(first.items()):
        label = "" if which == "now" else f" {which}"
        rows.insert(
            4 + k,
            ratio_row(
                "time the caller is blocked by the first save_checkpoint(background=True) of a "
                f"process{label}",
                "blocked",
                ts,
                "torch_save",
                0.2 if which == "now" else None,
                f"{mb}; each round in a fresh process (the baseline's alternating with this "
                f"checkout's when measured), each after {REST_SECONDS} s of rest; torch.save+fsync "
                "of the same state in the same process, before the save in one round and after "
                "it (its writes done) in the next, each after a `sync` (the disk's write budget: "
                "bench/__init__.py); a first save has no staging buffers: a forked child "
                "copies the tensors into new shared ones (copy-on-write image of the call) "
                "while the caller trains on",
                f,
            ),
        )
    new = statistics.median(t["bytes_new_10pct"])
    rows.append(
        _row(
            "bytes written by the 90%-unchanged save (dedup at work)",
            new / 1e6,
            "MB",
            reference=f"the state {total / 1e6:.0f} MB",
            ratio=new / total,
            note=(
                "how a default save skips the unchanged 90%: each chunk is compared bitwise "
                "(memcmp) with the object file the previous save of that tensor wrote, mapped "
                "read-only, and reuses its id when equal, so only changed chunks are hashed; "
                "the cost is that the last save's bytes stay mapped from the page cache "
                "(ledger-save-again row: they count in RSS as file-backed pages the kernel "
                "may reclaim; at most a quarter of RAM or of the cgroup limit is mapped)"
            ),
        )
    )
    notes = {
        "ledger-save-again": "a save, 10% of the tensors changed, a second save (peak over both)",
    }
    for op in MEMORY_OPS:
        mib = mem[op]["beyond_state_bytes"] / 2**20
        rows.append(
            _row(
                f"peak RSS beyond the state: {op}",
                mib,
                "MiB",
                reference=f"one tensor = {tensor_mib:.1f} MiB",
                ratio=mib / tensor_mib,
                note=notes.get(op, mb),
            )
        )
    return rows


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--time-load":
        print(_time_load(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])))
    elif len(sys.argv) > 1 and sys.argv[1] == "--replacing":
        args = int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]), int(sys.argv[5])
        rounds = _replacing_rounds(*args)
        print(json.dumps(rounds))
    elif len(sys.argv) > 1 and sys.argv[1] == "--first-background":
        figures = _first_background(int(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
        print(json.dumps(figures))
    elif len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(_child(sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]))))
    else:
        for row in run(quick="--quick" in sys.argv):
            print(row)
