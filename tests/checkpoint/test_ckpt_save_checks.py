"""save_checkpoint's checks: of its arguments, of a state that fails to encode, and rank 0's
checks before it publishes (every rank's report, every shard and its objects).

Pinned because mutation testing (issue #18) found them untested: step 0, a negative or boolean
step, keep_last of 1, a non-dict state, an error raised by a ``state_dict()``, the defaults of
``rng`` and ``trust_version_counter``, and the publish step's refusals.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledger.errors import IntegrityError, MissingObjectError, UsageError
from ledger.store import Store

torch = pytest.importorskip("torch")

from ledger.torch.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from ledger.torch.checkpoint.save import _check_shard, _publish  # noqa: E402

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


@pytest.mark.parametrize("step_that_fails", ["name", "sync"])
def test_a_save_that_fails_on_the_disk_leaves_no_temp_file_behind(
    store: Store, monkeypatch: pytest.MonkeyPatch, step_that_fails: str
) -> None:
    """A disk full while the shard manifest is made durable or named: the error is raised as
    it is, nothing is published, and the record's and refs' temp copies staged beside the
    manifest (one process) are removed with it, not left in tmp/ for a gc."""
    from ledger.torch.checkpoint import write

    def full(*_: object, **__: object) -> None:
        raise OSError(28, "No space left on device")

    save_checkpoint({"w": torch.zeros(4)}, step=1, store=store, run_id="r")
    tmp = store.root / "tmp"
    before = sorted(p.name for p in tmp.iterdir())
    monkeypatch.setattr(write.StagedObject, step_that_fails, full)
    with pytest.raises(OSError, match="No space left"):
        save_checkpoint({"w": torch.arange(1000.0)}, step=2, store=store, run_id="r")
    monkeypatch.undo()
    assert sorted(p.name for p in tmp.iterdir()) == before
    assert load_checkpoint(store=store, run_id="r").info.step == 1


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
    # in one process the check's own error comes out as is (not wrapped as unpublished)
    expected = rf"^rank 0: tensor w: object {chunk} holds 252 bytes, expected 256$"
    with pytest.raises(IntegrityError, match=expected):
        save_checkpoint({"w": weights}, step=2, store=store, run_id="r")
    assert store.refs.get("checkpoints/r/latest") == latest
    assert _steps(store) == ["checkpoints/r/latest", "checkpoints/r/step-1"]


def test_rng_states_are_saved_unless_asked_not_to(store: Store) -> None:
    save_checkpoint({"w": torch.zeros(2)}, step=1, store=store, run_id="r")
    assert "torch" in load_checkpoint(state={"w": None}, store=store, run_id="r").rng_restored
    save_checkpoint({"w": torch.zeros(2)}, step=2, store=store, run_id="r", rng=False)
    assert load_checkpoint(state={"w": None}, store=store, run_id="r").rng_restored == []


def test_by_default_a_tensor_changed_behind_its_version_counter_is_saved_as_it_is(
    store: Store,
) -> None:
    w = torch.zeros(4)
    save_checkpoint({"w": w}, step=1, store=store, run_id="r")
    version = w._version
    w.data.add_(1.0)  # through .data: the version counter does not move
    assert w._version == version
    save_checkpoint({"w": w}, step=2, store=store, run_id="r")
    assert torch.equal(load_checkpoint(store=store, run_id="r").state["w"], torch.ones(4))


def test_the_save_event_names_rank_zero_as_publisher(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    monkeypatch.setenv("LEDGER_RUN_DIR", str(run_dir))
    info = save_checkpoint({"x": torch.ones(2)}, step=3, store=store, run_id="r")
    (event,) = [json.loads(ln) for ln in (run_dir / "checkpoints.jsonl").read_text().splitlines()]
    assert {
        k: event[k] for k in ("event", "checkpoint", "run_id", "step", "rank", "world_size")
    } == {
        "event": "save",
        "checkpoint": info.oid,
        "run_id": "r",
        "step": 3,
        "rank": 0,
        "world_size": 1,
    }
    assert (event["bytes_total"], event["bytes_new"]) == (info.bytes_total, info.bytes_new)


# Rank 0's publish step on its own: what it does with the reports of several ranks, and its
# checks of each shard (a shard another rank wrote, or one whose objects went missing since).


def _shard(store: Store, run: str = "r") -> tuple[str, dict[str, Any]]:
    ckpt = store.get_json(store.refs.get(f"checkpoints/{run}/latest") or "")
    oid = ckpt["shards"][0]["manifest"]
    return oid, store.get_json(oid)


def test_publish_reports_the_errors_of_every_rank_and_publishes_nothing(store: Store) -> None:
    reports = [
        {"rank": 0, "step": 1, "shard": None, "error": "rank 0: disk full"},
        {"rank": 1, "step": 1, "shard": None, "error": None},
        {"rank": 2, "step": 1, "shard": None, "error": "rank 2: bad state"},
    ]
    verdict = _publish(store, reports, "r", 1, 3, None, "")
    assert verdict == {"error": "rank 0: disk full; rank 2: bad state"}
    assert _steps(store) == []


def test_publish_refuses_ranks_that_saved_different_steps(store: Store) -> None:
    save_checkpoint({"w": torch.zeros(2)}, step=1, store=store, run_id="r")
    oid, _ = _shard(store)
    reports = [
        {"rank": 0, "step": 2, "shard": oid, "error": None},
        {"rank": 1, "step": 1, "shard": oid, "error": None},
    ]
    assert _publish(store, reports, "r", 2, 2, None, "") == {
        "error": "ranks saved different steps: [1, 2]"
    }
    assert _steps(store) == ["checkpoints/r/latest", "checkpoints/r/step-1"]


def test_a_shard_of_another_step_rank_or_run_is_refused(store: Store) -> None:
    save_checkpoint({"w": torch.zeros(2)}, step=1, store=store, run_id="r")
    oid, _ = _shard(store)
    assert _check_shard(store, oid, "r", 1, 0, 1)[0].manifest == oid
    for run, step, rank, world in [("q", 1, 0, 1), ("r", 2, 0, 1), ("r", 1, 1, 2)]:
        with pytest.raises(IntegrityError, match=f"^shard {oid} is for run r step 1 rank 0/1"):
            _check_shard(store, oid, run, step, rank, world)


def test_a_shard_whose_state_or_chunk_object_is_gone_is_refused(store: Store) -> None:
    save_checkpoint({"w": torch.randn(8)}, step=1, store=store, run_id="r")
    oid, shard = _shard(store)
    (chunk,) = shard["tensors"][0]["chunks"]
    store.objects.delete(chunk)
    with pytest.raises(MissingObjectError, match=f"^rank 0: tensor w: object {chunk} is missing"):
        _check_shard(store, oid, "r", 1, 0, 1)
    store.objects.delete(shard["state"])
    with pytest.raises(MissingObjectError, match=f"^rank 0: state object {shard['state']}"):
        _check_shard(store, oid, "r", 1, 0, 1)
