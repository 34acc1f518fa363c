"""save_checkpoint / load_checkpoint in one process: round trips, dedup, events, bad input."""

from __future__ import annotations

import json
import random
from collections import OrderedDict
from pathlib import Path
from typing import Any

import pytest

from ledger.errors import CorruptObjectError, MissingObjectError, UnknownIdError, UsageError
from ledger.store import Store

torch = pytest.importorskip("torch")

from ledger.torch.checkpoint import (  # noqa: E402
    import_legacy,
    load_checkpoint,
    save_checkpoint,
)

pytestmark = pytest.mark.torch


def _model() -> Any:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(6, 5), torch.nn.BatchNorm1d(5), torch.nn.Linear(5, 2)
    )


def _trained() -> dict[str, Any]:
    model = _model()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, 1)
    model(torch.randn(4, 6)).sum().backward()
    opt.step()
    sched.step()
    return {"model": model, "optimizer": opt, "scheduler": sched, "counters": {"epoch": 3}}


def test_round_trip_of_plain_values_and_tensors(store: Store) -> None:
    state = {
        "ints": {0: 1, 2: (3, 4.5)},
        "floats": [float("nan"), float("inf"), -0.0, 1e-7],
        "nested": OrderedDict(b=torch.arange(6, dtype=torch.int16).reshape(2, 3), a=None),
        "bf16": torch.randn(3, dtype=torch.bfloat16),
        "empty": torch.empty(0, 4),
        "scalar": torch.tensor(2.5),
        "noncontig": torch.arange(12.0).reshape(3, 4).t(),
        "blob": b"\x00\xff",
        "$odd": True,
    }
    save_checkpoint(state, step=1, store=store, run_id="r")
    got = load_checkpoint(store=store, run_id="r").state
    assert got["ints"] == {0: 1, 2: (3, 4.5)}
    assert str(got["floats"]) == str(state["floats"])
    assert isinstance(got["nested"], OrderedDict) and list(got["nested"]) == ["b", "a"]
    for key in ("bf16", "empty", "scalar", "noncontig"):
        assert torch.equal(got[key], state[key]) and got[key].dtype == state[key].dtype
    assert got["nested"]["b"].dtype == torch.int16 and torch.equal(
        got["nested"]["b"], state["nested"]["b"]
    )
    assert got["blob"] == b"\x00\xff" and got["$odd"] is True


def test_resume_restores_objects_counters_and_rng(store: Store) -> None:
    state = _trained()
    info = save_checkpoint(state, step=7, store=store, run_id="r")
    expected_draw = torch.rand(3)
    fresh = _model()
    opt = torch.optim.Adam(fresh.parameters(), lr=0.01)
    target = {
        "model": fresh,
        "optimizer": opt,
        "scheduler": torch.optim.lr_scheduler.StepLR(opt, 1),
        "counters": {},
    }
    torch.rand(5)  # disturb the RNG: the load must put it back
    loaded = load_checkpoint(state=target, store=store, run_id="r")
    assert torch.equal(torch.rand(3), expected_draw)  # RNG restored last
    assert loaded.info.oid == info.oid and loaded.info.step == 7 and loaded.mode == "resume"
    assert target["counters"] == {"epoch": 3}
    assert "torch" in loaded.rng_restored
    for a, b in zip(state["model"].state_dict().values(), fresh.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    assert torch.equal(
        opt.state_dict()["state"][0]["exp_avg"],
        state["optimizer"].state_dict()["state"][0]["exp_avg"],
    )
    assert target["scheduler"].state_dict() == state["scheduler"].state_dict()


def test_warm_start_loads_weights_only(store: Store) -> None:
    save_checkpoint(_trained(), step=1, store=store, run_id="r")
    fresh = _model()
    torch.nn.init.zeros_(fresh[0].weight)
    opt = torch.optim.Adam(fresh.parameters())
    target = {"model": fresh, "optimizer": opt, "counters": {"epoch": 0}}
    before = torch.rand(1)
    torch.manual_seed(0)
    before = torch.rand(1)
    torch.manual_seed(0)
    loaded = load_checkpoint(state=target, store=store, run_id="r", mode="warm-start")
    assert torch.equal(torch.rand(1), before)  # RNG untouched
    assert loaded.rng_restored == [] and target["counters"] == {"epoch": 0}
    assert opt.state_dict()["state"] == {}
    assert fresh[0].weight.abs().sum() > 0


def test_unchanged_tensors_are_not_written_again(store: Store) -> None:
    big = {f"w{i}": torch.randn(256, 256) for i in range(10)}
    first = save_checkpoint({"w": big}, step=1, store=store, run_id="r")
    assert first.bytes_new == first.bytes_total == 10 * 256 * 256 * 4
    big["w0"].add_(1.0)
    second = save_checkpoint({"w": big}, step=2, store=store, run_id="r")
    assert second.bytes_new == 256 * 256 * 4 and second.dedup_ratio == pytest.approx(0.9)


def test_random_weights_are_stored_raw_and_chunked(store: Store) -> None:
    t = torch.randn(3 * 1024)  # 12 KiB in 4 KiB chunks
    save_checkpoint({"t": t}, step=1, store=store, run_id="r", chunk_size=4096)
    ckpt = store.get_json(store.refs.get("checkpoints/r/latest") or "")
    entry = store.get_json(ckpt["shards"][0]["manifest"])["tensors"][0]
    assert len(entry["chunks"]) == 3 and entry["dtype"] == "float32" and entry["shape"] == [3072]
    for oid in entry["chunks"]:
        assert store.objects.path_of(oid).read_bytes()[:1] == b"\x00"  # codec: raw
    zeros = save_checkpoint({"z": torch.zeros(1 << 16)}, step=2, store=store, run_id="r")
    assert zeros.bytes_new == 1 << 18
    ckpt = store.get_json(store.refs.get("checkpoints/r/latest") or "")
    zoid = store.get_json(ckpt["shards"][0]["manifest"])["tensors"][0]["chunks"][0]
    assert store.objects.path_of(zoid).read_bytes()[:1] == b"\x01"  # zeros compress: zstd


def test_retention_keeps_the_newest_steps(store: Store) -> None:
    for step in range(1, 6):
        save_checkpoint({"s": step}, step=step, store=store, run_id="r", keep_last=2)
    names = sorted(n for n, _ in store.refs.iter("checkpoints/r/"))
    assert names == ["checkpoints/r/latest", "checkpoints/r/step-4", "checkpoints/r/step-5"]
    assert load_checkpoint(3 + 2, store=store, run_id="r").state == {"s": 5}


def test_events_file_records_saves_and_loads(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    monkeypatch.setenv("LEDGER_DIR", str(store.root))
    monkeypatch.setenv("LEDGER_RUN_ID", "20261130T064000-3f9a1c2b")
    monkeypatch.setenv("LEDGER_RUN_DIR", str(run_dir))
    info = save_checkpoint({"x": torch.ones(2)}, step=3)
    load_checkpoint(state={"x": None})
    load_checkpoint(mode="warm-start")
    events = [json.loads(ln) for ln in (run_dir / "checkpoints.jsonl").read_text().splitlines()]
    assert [(e["event"], e["checkpoint"], e["step"]) for e in events] == [
        ("save", info.oid, 3),
        ("load", info.oid, 3),
        ("load", info.oid, 3),
    ]
    assert [e.get("mode") for e in events] == [None, "resume", "warm-start"]


def test_keep_last_below_two_is_refused(store: Store) -> None:
    with pytest.raises(UsageError, match="keep_last=1"):
        save_checkpoint({"a": 1}, step=1, store=store, run_id="r", keep_last=1)


def test_non_json_value_is_refused_naming_its_key(store: Store) -> None:
    import numpy as np

    with pytest.raises(UsageError, match=r"numpy.ndarray at counters/hist"):
        save_checkpoint({"counters": {"hist": np.zeros(3)}}, step=1, store=store, run_id="r")
    with pytest.raises(UsageError, match=r"at extra/1"):
        save_checkpoint({"extra": [1, object()]}, step=1, store=store, run_id="r")
    assert store.refs.get("checkpoints/r/latest") is None


def test_shape_mismatch_names_the_tensor(store: Store) -> None:
    save_checkpoint({"model": _model()}, step=1, store=store, run_id="r")
    other = torch.nn.Sequential(
        torch.nn.Linear(6, 7), torch.nn.BatchNorm1d(7), torch.nn.Linear(7, 2)
    )
    with pytest.raises(UsageError, match=r"tensor model/0\.weight is \(5, 6\).*\(7, 6\)"):
        load_checkpoint(state={"model": other}, store=store, run_id="r")


def test_unknown_checkpoint_is_refused(store: Store) -> None:
    with pytest.raises(UnknownIdError, match="no checkpoint latest for run nope"):
        load_checkpoint(store=store, run_id="nope")
    save_checkpoint({"a": 1}, step=1, store=store, run_id="r")
    with pytest.raises(UnknownIdError, match=r"saved steps: \[1\]"):
        load_checkpoint(2, store=store, run_id="r")
    with pytest.raises(UsageError):
        load_checkpoint("b3:" + "0" * 64, store=store)
    blob = store.objects.put_bytes(b"not a checkpoint")
    with pytest.raises(UsageError, match="not a checkpoint"):
        load_checkpoint(blob, store=store)
    with pytest.raises(UsageError, match="no run id"):
        load_checkpoint(store=store)


def _tensor_chunk(store: Store) -> str:
    ckpt = store.get_json(store.refs.get("checkpoints/r/latest") or "")
    return str(store.get_json(ckpt["shards"][0]["manifest"])["tensors"][0]["chunks"][0])


def test_corrupt_tensor_object_is_an_integrity_error_naming_it(store: Store) -> None:
    model = _model()
    save_checkpoint({"model": model}, step=1, store=store, run_id="r")
    oid = _tensor_chunk(store)
    path = store.objects.path_of(oid)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.chmod(0o644)
    path.write_bytes(bytes(data))
    fresh = _model()
    torch.nn.init.zeros_(fresh[0].weight)
    with pytest.raises(CorruptObjectError, match=rf"tensor model/0\.weight: object {oid}"):
        load_checkpoint(state={"model": fresh}, store=store, run_id="r")
    assert fresh[0].weight.abs().sum() == 0  # nothing applied


def test_missing_tensor_object_is_reported(store: Store) -> None:
    save_checkpoint({"model": _model()}, step=1, store=store, run_id="r")
    oid = _tensor_chunk(store)
    store.objects.delete(oid)
    with pytest.raises(MissingObjectError, match=rf"tensor model/0\.weight: object {oid}"):
        load_checkpoint(store=store, run_id="r")


def test_import_legacy_uses_weights_only(store: Store, tmp_path: Path) -> None:
    model = _model()
    torch.save(model.state_dict(), tmp_path / "old.pt")
    info = import_legacy(tmp_path / "old.pt", store=store, run_id="legacy", step=5, key="model")
    assert "weights_only=True" in info.note and info.step == 5
    fresh = torch.nn.Sequential(
        torch.nn.Linear(6, 5), torch.nn.BatchNorm1d(5), torch.nn.Linear(5, 2)
    )
    load_checkpoint(state={"model": fresh}, store=store, run_id="legacy", mode="warm-start")
    assert torch.equal(fresh[0].weight, model[0].weight)

    class Evil:
        def __reduce__(self) -> Any:
            return (random.seed, (1,))

    torch.save({"x": Evil()}, tmp_path / "evil.pt")
    with pytest.raises(UsageError, match="weights_only=True"):
        import_legacy(tmp_path / "evil.pt", store=store, run_id="legacy")


def test_trusting_version_counters_skips_unchanged_tensors(store: Store) -> None:
    model = torch.nn.Linear(64, 64)
    opts = {"store": store, "run_id": "r", "trust_version_counter": True}
    save_checkpoint({"model": model}, step=1, **opts)
    with torch.no_grad():
        model.bias.add_(1.0)  # an in-place op bumps the version counter: detected
    save_checkpoint({"model": model}, step=2, **opts)
    loaded = load_checkpoint(store=store, run_id="r").state["model"]
    assert torch.equal(loaded["bias"], model.bias) and torch.equal(loaded["weight"], model.weight)
    model.weight.data.mul_(2.0)  # .data bypasses the counter: the documented hazard
    save_checkpoint({"model": model}, step=3, **opts)
    stale = load_checkpoint(store=store, run_id="r").state["model"]["weight"]
    assert not torch.equal(stale, model.weight)
    save_checkpoint({"model": model}, step=4, store=store, run_id="r")  # default: always hashes
    fresh = load_checkpoint(store=store, run_id="r").state["model"]["weight"]
    assert torch.equal(fresh, model.weight)
    save_checkpoint({"model": model}, step=5, **opts)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)  # optimizers write in place: detected
    model(torch.ones(2, 64)).sum().backward()
    opt.step()
    save_checkpoint({"model": model}, step=6, **opts)
    loaded = load_checkpoint(store=store, run_id="r").state["model"]
    assert torch.equal(loaded["weight"], model.weight) and torch.equal(loaded["bias"], model.bias)
    model.bias.detach().numpy()[0] += 1.0  # a numpy view shares memory, not the counter: missed
    save_checkpoint({"model": model}, step=7, **opts)
    assert not torch.equal(
        load_checkpoint(store=store, run_id="r").state["model"]["bias"], model.bias
    )


@pytest.mark.parametrize(
    "tensors", [1, 6]
)  # fewer chunks than workers: hashed whole, else piece by piece
def test_a_load_verifies_every_piece_of_a_large_tensor(store: Store, tensors: int) -> None:
    g = torch.Generator().manual_seed(3)
    state = {f"t{i}": torch.randn(300_000, generator=g) for i in range(tensors)}  # 1.2 MB each
    save_checkpoint(state, step=1, store=store, run_id="r")
    loaded = load_checkpoint(store=store, run_id="r").state
    assert all(
        torch.equal(loaded[k].view(torch.int32), v.view(torch.int32)) for k, v in state.items()
    )
    oid = _tensor_chunk(store)
    path = store.objects.path_of(oid)
    data = bytearray(path.read_bytes())
    data[len(data) - 1000] ^= 0x80  # a sign bit in the last piece
    path.chmod(0o644)
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptObjectError, match=rf"tensor t0: object {oid} is corrupt"):
        load_checkpoint(store=store, run_id="r")
