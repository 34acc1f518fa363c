"""save_checkpoint's checks of its arguments, and what it does with a state that fails to encode.

Pinned because mutation testing (issue #18) found them untested: step 0, a negative or boolean
step, keep_last of 1, a non-dict state, and an error raised by a ``state_dict()``.
"""

from __future__ import annotations

from typing import Any

import pytest

from ledger.errors import IntegrityError, UsageError
from ledger.store import Store

torch = pytest.importorskip("torch")

from ledger.torch.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402

pytestmark = pytest.mark.torch


def _steps(store: Store) -> list[str]:
    return store.refs.names("checkpoints/")


def test_step_zero_is_a_step(store: Store) -> None:
    info = save_checkpoint({"w": torch.zeros(2)}, step=0, store=store, run_id="r")
    assert info.step == 0
    assert load_checkpoint(store=store, run_id="r").info.step == 0


@pytest.mark.parametrize("step", [-1, True, False, 1.0, "3", None])
def test_a_step_that_is_not_a_non_negative_int_is_refused(store: Store, step: Any) -> None:
    with pytest.raises(UsageError, match="step must be a non-negative int"):
        save_checkpoint({"w": torch.zeros(2)}, step=step, store=store, run_id="r")
    assert _steps(store) == []


@pytest.mark.parametrize("keep_last", [1, 0, -3, "3", 2.0])
def test_keep_last_below_two_or_not_an_int_is_refused(store: Store, keep_last: Any) -> None:
    with pytest.raises(UsageError, match="keep_last"):
        save_checkpoint({"w": torch.zeros(2)}, step=1, store=store, run_id="r", keep_last=keep_last)
    assert _steps(store) == []


def test_keep_last_two_keeps_the_newest_two(store: Store) -> None:
    for step in (1, 2, 3):
        save_checkpoint({"w": torch.zeros(2)}, step=step, store=store, run_id="r", keep_last=2)
    assert _steps(store) == ["checkpoints/r/latest", "checkpoints/r/step-2", "checkpoints/r/step-3"]


@pytest.mark.parametrize("state", [[torch.zeros(2)], None, torch.zeros(2)])
def test_a_state_that_is_not_a_dict_is_refused(store: Store, state: Any) -> None:
    with pytest.raises(UsageError, match="state must be a dict"):
        save_checkpoint(state, step=1, store=store, run_id="r")
    assert _steps(store) == []


def test_background_with_trusted_version_counters_is_refused(store: Store) -> None:
    with pytest.raises(UsageError, match="trust_version_counter"):
        save_checkpoint(
            {"w": torch.zeros(2)},
            step=1,
            store=store,
            run_id="r",
            background=True,
            trust_version_counter=True,
        )
    assert _steps(store) == []


class _Broken:
    def state_dict(self) -> dict[str, Any]:
        raise RuntimeError("the optimizer is in a bad state")

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass  # never called: the save fails


def test_an_error_of_a_state_dict_is_raised_as_is_in_one_process(store: Store) -> None:
    with pytest.raises(RuntimeError, match="the optimizer is in a bad state"):
        save_checkpoint({"opt": _Broken()}, step=1, store=store, run_id="r")
    assert _steps(store) == []


def test_the_save_reports_its_own_duration(store: Store) -> None:
    info = save_checkpoint({"w": torch.zeros(2)}, step=1, store=store, run_id="r")
    assert 0.0 <= info.seconds < 600.0


def test_a_reused_raw_chunk_of_the_wrong_size_stops_the_publish(store: Store) -> None:
    torch.manual_seed(0)
    weights = torch.randn(64)  # random floats: stored raw (codec byte 0)
    save_checkpoint({"w": weights}, step=1, store=store, run_id="r")
    latest = store.refs.get("checkpoints/r/latest")
    shard = store.get_json(store.get_json(latest or "")["shards"][0]["manifest"])
    (chunk,) = shard["tensors"][0]["chunks"]
    path = store.objects.path_of(chunk)
    data = path.read_bytes()
    assert data[:1] == b"\x00" and len(data) == 64 * 4 + 1
    path.chmod(0o644)
    path.write_bytes(data[:-4])  # the next save finds the object and reuses it
    with pytest.raises(
        IntegrityError, match=rf"tensor w: object {chunk} holds 252 bytes, expected 256"
    ):
        save_checkpoint({"w": weights}, step=2, store=store, run_id="r")
    assert store.refs.get("checkpoints/r/latest") == latest
    assert _steps(store) == ["checkpoints/r/latest", "checkpoints/r/step-1"]
