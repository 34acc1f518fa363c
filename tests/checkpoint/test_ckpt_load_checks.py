"""load_checkpoint's and import_legacy's checks and edges, in one process.

Pinned because mutation testing (issue #18) found them untested: an unknown mode, a record
whose shard is of another step, keys missing from the checkpoint, strict loading of a model,
shapes checked inside an optimizer's state, nested modules in a warm start, a plain value saved
where the template holds a dict, RNG generators no longer registered, and import_legacy's
defaults and wrapping.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ledger.errors import IntegrityError, UsageError
from ledger.store import Store

torch = pytest.importorskip("torch")

from ledger.runtime import rng  # noqa: E402
from ledger.torch.checkpoint import import_legacy, load_checkpoint, save_checkpoint  # noqa: E402

pytestmark = pytest.mark.torch


def _linear(out: int = 5) -> Any:
    torch.manual_seed(0)
    return torch.nn.Linear(6, out)


def test_an_unknown_mode_is_refused(store: Store) -> None:
    save_checkpoint({"w": torch.zeros(2)}, step=1, store=store, run_id="r")
    with pytest.raises(UsageError, match="mode must be 'resume' or 'warm-start', got 'weights'"):
        load_checkpoint(store=store, run_id="r", mode="weights")  # type: ignore[arg-type]


def test_the_load_reports_its_own_duration(store: Store) -> None:
    save_checkpoint({"w": torch.zeros(2)}, step=1, store=store, run_id="r")
    assert 0.0 <= load_checkpoint(store=store, run_id="r").info.seconds < 600.0


def test_a_record_whose_shard_is_of_another_step_is_refused(store: Store) -> None:
    save_checkpoint({"w": torch.zeros(2)}, step=1, store=store, run_id="r")
    record = store.get_json(store.refs.get("checkpoints/r/latest") or "")
    forged = store.put_json({**record, "step": 9})
    with pytest.raises(IntegrityError, match=f"checkpoint {forged}: shard 0 does not match"):
        load_checkpoint(forged, store=store, run_id="r")


def test_a_resume_needs_every_key_of_the_template(store: Store) -> None:
    save_checkpoint({"a": 1}, step=1, store=store, run_id="r")
    with pytest.raises(UsageError, match=r"the checkpoint has no 'b'; it has \['a'\]"):
        load_checkpoint(state={"a": 0, "b": 0}, store=store, run_id="r")


def test_a_warm_start_skips_missing_plain_keys_but_not_missing_modules(store: Store) -> None:
    saved = _linear()
    save_checkpoint({"model": saved}, step=1, store=store, run_id="r")
    model = torch.nn.Linear(6, 5)
    state = {"model": model, "epoch": 7}
    load_checkpoint(state=state, store=store, run_id="r", mode="warm-start")
    assert torch.equal(model.weight, saved.weight) and state["epoch"] == 7
    with pytest.raises(UsageError, match="the checkpoint has no 'head'"):
        load_checkpoint(
            state={"model": model, "head": torch.nn.Linear(5, 2)},
            store=store,
            run_id="r",
            mode="warm-start",
        )


def test_a_model_with_other_parameters_loads_only_when_not_strict(store: Store) -> None:
    save_checkpoint({"model": torch.nn.Sequential(_linear())}, step=1, store=store, run_id="r")
    bigger = torch.nn.Sequential(_linear(), torch.nn.ReLU(), torch.nn.Linear(5, 2))
    with pytest.raises(UsageError, match=r"(?s)cannot load model into the model: .*Missing key"):
        load_checkpoint(state={"model": bigger}, store=store, run_id="r", mode="warm-start")
    load_checkpoint(
        state={"model": bigger}, store=store, run_id="r", mode="warm-start", strict=False
    )
    assert torch.equal(bigger[0].weight, _linear().weight)


def _adam_after_a_step(model: Any) -> Any:
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    model(torch.ones(1, 6)).sum().backward()
    opt.step()
    return opt


def test_an_optimizer_state_of_other_shapes_is_refused_naming_the_tensor(store: Store) -> None:
    save_checkpoint({"opt": _adam_after_a_step(_linear(5))}, step=1, store=store, run_id="r")
    other = _adam_after_a_step(_linear(4))
    with pytest.raises(UsageError, match=r"tensor opt/state/0/exp_avg is \(5, 6\) torch.float32"):
        load_checkpoint(state={"opt": other}, store=store, run_id="r")


def test_a_warm_start_loads_modules_nested_in_dicts(store: Store) -> None:
    saved = _linear()
    save_checkpoint({"nets": {"enc": saved}, "step": 3}, step=1, store=store, run_id="r")
    enc = torch.nn.Linear(6, 5)
    load_checkpoint(state={"nets": {"enc": enc}}, store=store, run_id="r", mode="warm-start")
    assert torch.equal(enc.weight, saved.weight)


def test_a_value_saved_where_the_template_holds_a_dict_replaces_it(store: Store) -> None:
    save_checkpoint({"counters": 5}, step=1, store=store, run_id="r")
    state: dict[str, Any] = {"counters": {"epoch": 1}}
    load_checkpoint(state=state, store=store, run_id="r")
    assert state == {"counters": 5}


def test_a_generator_registered_at_save_but_gone_at_load_is_skipped(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(rng._torch_generators, "augment", torch.Generator().manual_seed(1))
    save_checkpoint({"w": torch.zeros(2)}, step=1, store=store, run_id="r")
    monkeypatch.delitem(rng._torch_generators, "augment")
    loaded = load_checkpoint(state={"w": None}, store=store, run_id="r")
    assert "torch" in loaded.rng_restored


def test_import_legacy_defaults_wrapping_and_missing_files(store: Store, tmp_path: Path) -> None:
    torch.save({"w": torch.ones(2), "epoch": 3}, tmp_path / "plain.pt")
    info = import_legacy(tmp_path / "plain.pt", store=store, run_id="a")
    assert info.step == 0
    loaded = load_checkpoint(state={"w": None, "epoch": 0}, store=store, run_id="a")
    assert loaded.state["epoch"] == 3 and torch.equal(loaded.state["w"], torch.ones(2))
    assert loaded.rng_restored == []  # an imported file holds no RNG state
    torch.save(torch.arange(3), tmp_path / "bare.pt")
    import_legacy(tmp_path / "bare.pt", store=store, run_id="b", step=2)
    assert torch.equal(load_checkpoint(store=store, run_id="b").state["state"], torch.arange(3))
    with pytest.raises(UsageError, match=r"no such file: .*missing\.pt"):
        import_legacy(tmp_path / "missing.pt", store=store, run_id="c")
    assert store.refs.names("checkpoints/c/") == []


@pytest.mark.parametrize("mode", ["resume", "warm-start"])
def test_a_model_or_optimizer_over_something_else_than_a_state_dict_is_refused(
    store: Store, mode: Any
) -> None:
    save_checkpoint({"model": torch.zeros(3), "opt": [1, 2]}, step=1, store=store, run_id="r")
    model = _linear()
    with pytest.raises(UsageError, match=r"^cannot load model: the checkpoint holds no state dict"):
        load_checkpoint(state={"model": model}, store=store, run_id="r", mode=mode)
    opt = _adam_after_a_step(model)
    with pytest.raises(UsageError, match=r"^cannot load opt: the checkpoint holds no state dict"):
        load_checkpoint(state={"opt": opt}, store=store, run_id="r")


def test_a_model_over_plain_values_is_refused_naming_the_parameter(store: Store) -> None:
    save_checkpoint({"model": {"weight": 1.0, "bias": 2.0}}, step=1, store=store, run_id="r")
    with pytest.raises(UsageError, match=r'(?s)^cannot load model into the model: .*"weight"'):
        load_checkpoint(state={"model": _linear()}, store=store, run_id="r", mode="warm-start")


def test_a_forged_state_that_is_not_a_dict_is_refused(store: Store) -> None:
    save_checkpoint({"a": 1}, step=1, store=store, run_id="r")
    record = store.get_json(store.refs.get("checkpoints/r/latest") or "")
    shard = store.get_json(record["shards"][0]["manifest"])
    forged_shard = store.put_json({**shard, "state": store.put_json(["a", 1])})
    forged = store.put_json(
        {**record, "shards": [{**record["shards"][0], "manifest": forged_shard}]}
    )
    with pytest.raises(UsageError, match=r"^checkpoint holds a list at <root>$"):
        load_checkpoint(forged, state={"a": 0}, store=store, run_id="r")
