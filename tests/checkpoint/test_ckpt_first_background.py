"""The first background save of a process: no staging buffers yet, so a forked child copies the
tensors into new shared ones while the caller trains on; and no DTensor import on the way."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ledger.errors import LedgerError
from ledger.store import Store

torch = pytest.importorskip("torch")

from ledger.torch.checkpoint import background as ckpt_background  # noqa: E402
from ledger.torch.checkpoint import (  # noqa: E402
    forkcopy,
    load_checkpoint,
    save_checkpoint,
    wait_for_checkpoints,
)

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(not forkcopy.available(), reason="needs fork and memfd_create (Linux)"),
]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a new process: no staging buffers; and fork for any size, as a large state would."""
    wait_for_checkpoints()
    ckpt_background._staging.clear()
    monkeypatch.setattr(ckpt_background, "_fork_pays", lambda nbytes: True)


def _state() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    return {f"w{i}": torch.randn(300_000 + i, generator=g) for i in range(4)}


def test_forking_pays_for_a_large_share_of_the_process_only() -> None:
    assert forkcopy.pays(1 << 40, 32 << 20)  # far more than this process holds
    assert not forkcopy.pays(1 << 20, 32 << 20)  # under the floor
    resident = int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    assert not forkcopy.pays(resident // 64, 0)  # a sliver of the process: copying is cheaper
    assert forkcopy.pays(resident // 4, 0)


def _staged_in_shared_memory() -> bool:
    return "memfd:ledger-staging" in Path("/proc/self/maps").read_text()


def test_training_changes_the_tensors_at_once_and_the_first_save_keeps_the_old_bytes(
    tmp_path: Path,
) -> None:
    store = Store.init(tmp_path / ".ledger")
    state = _state()
    want = {k: v.clone() for k, v in state.items()}
    pending = save_checkpoint({"m": state}, step=1, store=store, run_id="r", background=True)
    for t in state.values():  # the very next statement of training, while the child copies
        t.add_(1.0)
    state["w0"].zero_()
    pending.wait(timeout=120)
    assert _staged_in_shared_memory()  # the copies were made by the child, into shared pages
    loaded = load_checkpoint(store=store, run_id="r").state["m"]
    for k, v in want.items():
        assert torch.equal(loaded[k], v), k
    # the next save reuses those buffers and keeps its own bytes
    staged = {k: t.data_ptr() for k, t in ckpt_background._staging.items()}
    want2 = {k: v.clone() for k, v in state.items()}
    pending = save_checkpoint({"m": state}, step=2, store=store, run_id="r", background=True)
    state["w1"].mul_(3.0)
    pending.wait(timeout=120)
    assert {k: t.data_ptr() for k, t in ckpt_background._staging.items()} == staged
    loaded = load_checkpoint(2, store=store, run_id="r").state["m"]
    for k, v in want2.items():
        assert torch.equal(loaded[k], v), k


def test_a_copying_child_that_dies_fails_the_save_and_publishes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store.init(tmp_path / ".ledger")
    save_checkpoint({"m": {"w": torch.ones(10)}}, step=1, store=store, run_id="r")
    ckpt_background._staging.clear()

    def killed(*_a: object) -> None:  # runs in the child only: the fork succeeds here
        os.kill(os.getpid(), signal.SIGKILL)

    monkeypatch.setattr(forkcopy, "_write", killed)
    pending = save_checkpoint({"m": _state()}, step=2, store=store, run_id="r", background=True)
    with pytest.raises(LedgerError, match="killed by signal 9") as err:
        pending.wait(timeout=120)
    assert "previous checkpoint is still the latest" in (err.value.hint or "")
    assert load_checkpoint(store=store, run_id="r").info.step == 1


def test_a_first_save_does_not_import_dtensor(tmp_path: Path) -> None:
    """torch.distributed.tensor takes about a second to import (sympy): a process without
    DTensors must not pay it inside the save that holds training."""
    store = Store.init(tmp_path / ".ledger")
    prog = (
        "import sys, torch\n"
        "from ledger.torch.checkpoint import save_checkpoint\n"
        f"p = save_checkpoint({{'w': torch.ones(8)}}, step=1, store={str(store.root)!r}, "
        "run_id='r', background=True)\n"
        "p.wait()\n"
        "print('torch.distributed.tensor' in sys.modules)\n"
    )
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [sys.executable, "-c", prog], env=env, check=True, timeout=120, capture_output=True
    )
    assert out.stdout.decode().strip() == "False"
