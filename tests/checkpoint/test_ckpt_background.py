"""save_checkpoint(background=True): copy on save, one save in flight, errors not lost."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.errors import UsageError
from ledger.store import Store

torch = pytest.importorskip("torch")

from ledger.torch.checkpoint import (  # noqa: E402
    PendingCheckpoint,
    load_checkpoint,
    save_checkpoint,
    wait_for_checkpoints,
)
from ledger.torch.checkpoint import background as ckpt_background  # noqa: E402

pytestmark = pytest.mark.torch
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    """Holds every background save before it writes anything, until the test sets it."""
    ev = threading.Event()
    ckpt_background._gate = ev
    try:
        yield ev
    finally:
        ev.set()
        ckpt_background._gate = None
        with contextlib.suppress(Exception):
            wait_for_checkpoints()


def _state(seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(64, 32, generator=g)
    return {
        "w": torch.randn(1000, generator=g),
        "t": base.t(),  # not contiguous
        "z": torch.complex(base, base).conj(),  # a conj view
    }


def test_tensors_are_copied_before_save_returns(tmp_path: Path, gate: threading.Event) -> None:
    store = Store.init(tmp_path / ".ledger")
    state = _state(1)
    want = {k: v.clone() for k, v in state.items()}
    pending = save_checkpoint(
        {"m": state, "n": 3}, step=1, store=store, run_id="r", background=True
    )
    assert isinstance(pending, PendingCheckpoint) and not pending.done()
    for t in state.values():  # training changes everything while the save waits at the gate
        t.zero_()
    gate.set()
    info = pending.wait(timeout=60)
    assert pending.done() and info.step == 1 and info.seconds >= pending.blocked_seconds
    loaded = load_checkpoint(store=store, run_id="r").state
    assert loaded["n"] == 3
    for k, v in want.items():
        assert torch.equal(loaded["m"][k], v.resolve_conj()), k


def test_one_save_in_flight_the_next_waits(tmp_path: Path, gate: threading.Event) -> None:
    store = Store.init(tmp_path / ".ledger")
    first = save_checkpoint({"m": _state(1)}, step=1, store=store, run_id="r", background=True)
    done: list[int] = []

    def second() -> None:
        done.append(save_checkpoint({"m": _state(2)}, step=2, store=store, run_id="r").step)

    th = threading.Thread(target=second)
    th.start()
    time.sleep(0.5)
    assert not done and not first.done()  # the foreground save waits for the background one
    assert store.refs.get("checkpoints/r/latest") is None
    gate.set()
    th.join(60)
    assert done == [2] and first.wait().step == 1
    assert load_checkpoint(store=store, run_id="r").info.step == 2
    assert load_checkpoint(1, store=store, run_id="r").info.step == 1


def _break(store: Store) -> None:
    """The thread cannot create its temp files: the store's tmp folder becomes a file."""
    shutil.rmtree(store.root / "tmp")
    (store.root / "tmp").write_bytes(b"")


def test_a_failed_background_save_is_raised_by_wait_or_the_next_save(
    tmp_path: Path, gate: threading.Event
) -> None:
    store = Store.init(tmp_path / ".ledger")
    save_checkpoint({"m": _state(1)}, step=1, store=store, run_id="r", background=True)
    _break(store)
    gate.set()
    with pytest.raises(OSError):
        save_checkpoint({"m": _state(2)}, step=2, store=store, run_id="r")  # nobody waited
    assert store.refs.get("checkpoints/r/latest") is None

    gate.clear()
    store2 = Store.init(tmp_path / "other")
    pending = save_checkpoint({"m": _state(1)}, step=1, store=store2, run_id="r", background=True)
    _break(store2)
    gate.set()
    with pytest.raises(OSError):
        pending.wait()
    wait_for_checkpoints()  # already reported by wait(): not raised twice


def test_bad_state_is_refused_before_returning(tmp_path: Path) -> None:
    store = Store.init(tmp_path / ".ledger")
    with pytest.raises(UsageError, match="cannot checkpoint"):
        save_checkpoint({"m": object()}, step=1, store=store, run_id="r", background=True)
    with pytest.raises(UsageError, match="trust_version_counter"):
        save_checkpoint(
            {"m": _state(1)},
            step=1,
            store=store,
            run_id="r",
            background=True,
            trust_version_counter=True,
        )


def test_interpreter_exit_waits_for_the_save(tmp_path: Path) -> None:
    store = Store.init(tmp_path / ".ledger")
    prog = (
        "import sys, torch\n"
        "from ledger.torch.checkpoint import save_checkpoint\n"
        "s = {'w': torch.arange(4_000_000, dtype=torch.float32)}\n"
        f"save_checkpoint(s, step=7, store={str(store.root)!r}, run_id='r', background=True)\n"
        "s['w'].zero_()\n"
        "sys.exit(0)\n"
    )
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-c", prog], env=env, check=True, timeout=120)
    loaded = load_checkpoint(store=store, run_id="r")
    assert loaded.info.step == 7
    assert torch.equal(loaded.state["w"], torch.arange(4_000_000, dtype=torch.float32))


def test_staging_buffers_are_reused_and_each_save_keeps_its_own_bytes(tmp_path: Path) -> None:
    store = Store.init(tmp_path / ".ledger")
    state = _state(1)
    first = save_checkpoint({"m": state}, step=1, store=store, run_id="r", background=True)
    first.wait(timeout=60)
    staged = {k: t.data_ptr() for k, t in ckpt_background._staging.items()}
    assert set(staged) == {"m/w", "m/t", "m/z"}
    want1 = {k: v.resolve_conj().clone() for k, v in state.items()}
    state["w"][7] = -state["w"][7]
    second = save_checkpoint({"m": state}, step=2, store=store, run_id="r", background=True)
    second.wait(timeout=60)
    assert {k: t.data_ptr() for k, t in ckpt_background._staging.items()} == staged
    for step, want in ((1, want1), (2, {k: v.resolve_conj() for k, v in state.items()})):
        loaded = load_checkpoint(step, store=store, run_id="r").state["m"]
        for k, v in want.items():
            assert torch.equal(loaded[k], v), (step, k)
    save_checkpoint({"m": {"w": state["w"]}}, step=3, store=store, run_id="r", background=True)
    wait_for_checkpoints()
    assert set(ckpt_background._staging) == {"m/w"}  # buffers of keys no longer saved are freed


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_tensors_are_staged_in_pinned_memory(tmp_path: Path) -> None:
    store = Store.init(tmp_path / ".ledger")
    g = torch.Generator().manual_seed(5)
    state = {"w": torch.randn(1 << 20, generator=g).cuda(), "t": torch.randn(64, 32).cuda().t()}
    want = {k: v.cpu() for k, v in state.items()}
    pending = save_checkpoint({"m": state}, step=1, store=store, run_id="r", background=True)
    for t in state.values():  # the copies were complete when the call returned
        t.zero_()
    pending.wait(timeout=60)
    assert all(b.is_pinned() for b in ckpt_background._staging.values())
    loaded = load_checkpoint(store=store, run_id="r").state["m"]
    for k, v in want.items():
        assert torch.equal(loaded[k], v), k


def test_a_kept_buffer_is_compared_piece_by_piece_before_copying(tmp_path: Path) -> None:
    store = Store.init(tmp_path / ".ledger")
    big = torch.randn(3 * ckpt_background._PIECE // 4)  # three staging pieces
    for step in (1, 2, 3):
        if step == 3:
            big.numpy().view("uint8")[ckpt_background._PIECE + 5] ^= 0x80  # piece 2 only
        save_checkpoint({"big": big}, step=step, store=store, run_id="r", background=True)
        wait_for_checkpoints()
        loaded = load_checkpoint(store=store, run_id="r").state["big"]
        assert torch.equal(loaded.view(torch.int32), big.view(torch.int32)), step


def test_saves_called_from_two_threads_at_once_keep_their_own_bytes(tmp_path: Path) -> None:
    store = Store.init(tmp_path / ".ledger")
    states = {step: {"w": torch.full((1 << 20,), float(step))} for step in range(1, 9)}
    barrier = threading.Barrier(2)

    def save(steps: list[int]) -> None:
        for step in steps:
            barrier.wait()  # both threads call save_checkpoint at the same moment
            save_checkpoint(states[step], step=step, store=store, run_id="r", background=True)

    threads = [threading.Thread(target=save, args=(s,)) for s in ([1, 3, 5, 7], [2, 4, 6, 8])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wait_for_checkpoints()
    for step, state in states.items():
        assert torch.equal(load_checkpoint(step, store=store, run_id="r").state["w"], state["w"])


def test_a_background_save_after_the_first_starts_no_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Starting a thread makes the caller wait until it runs (milliseconds on a busy machine),
    inside the time a background save holds training: the saves run on one thread kept for
    the process, and their helpers are kept too (the old code started 5 threads of its own in
    this save: the save's, its helpers, the skeleton's writer)."""
    store = Store.init(tmp_path / ".ledger")
    state = {"w": torch.randn(1 << 18), "b": torch.randn(1 << 16)}
    save_checkpoint({"m": state}, step=1, store=store, run_id="r", background=True).wait(60)
    started: list[str] = []
    start = threading.Thread.start

    def counting(t: threading.Thread) -> None:  # by the module of the thread's code
        started.append(getattr(getattr(t, "_target", None), "__module__", "?"))
        start(t)

    monkeypatch.setattr(threading.Thread, "start", counting)
    state["w"].add_(1.0)
    pending = save_checkpoint({"m": state}, step=2, store=store, run_id="r", background=True)
    pending.wait(60)
    # The store's threads are kept too: the old code started two of ``ledger.store.repo`` for
    # the ref files' temp copies (``Store.set_refs``) on every save.
    assert started == []
    assert load_checkpoint(store=store, run_id="r").info.step == 2
