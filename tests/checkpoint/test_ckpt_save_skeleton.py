"""The skeleton (a checkpoint's non-tensor structure) is stored on a thread beside the chunks;
when that write fails, the save fails with that error and publishes nothing (#18: dropping the
thread's error or the raise of it survived mutation testing)."""

from __future__ import annotations

import errno
import threading
from typing import Any

import pytest

from ledger.store import Store

torch = pytest.importorskip("torch")

from ledger.torch.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402

pytestmark = pytest.mark.torch


def test_a_failed_skeleton_write_fails_the_save_and_publishes_nothing(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    state: dict[str, Any] = {"w": torch.arange(4.0), "epoch": 3}
    save_checkpoint(state, step=1, store=store, run_id="r")
    real = Store.put_json

    def failing_off_the_main_thread(self: Store, value: Any) -> str:
        if threading.current_thread() is not threading.main_thread():
            raise OSError(errno.ENOSPC, "No space left on device (test)")
        return real(self, value)

    monkeypatch.setattr(Store, "put_json", failing_off_the_main_thread)
    with pytest.raises(OSError) as caught:
        save_checkpoint({"w": torch.arange(4.0) + 1, "epoch": 4}, step=2, store=store, run_id="r")
    # The thread's own error, raised as is (not a later failure about the missing skeleton id).
    assert caught.value.errno == errno.ENOSPC and "(test)" in str(caught.value)
    monkeypatch.undo()
    assert store.refs.get("checkpoints/r/step-2") is None
    loaded = load_checkpoint(store=store, run_id="r", mode="warm-start")
    assert loaded.info.step == 1  # latest is still the step-1 checkpoint
