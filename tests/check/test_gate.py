"""The delivery gate on small real models, and models that must fail each gate check."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

from ledger.check.spec import load_spec  # noqa: E402
from ledger.gate import checks, run_gate, store_gate  # noqa: E402
from ledger.store import Store  # noqa: E402

pytestmark = pytest.mark.torch


def _model(entry: str) -> tuple[Any, Any]:
    spec = load_spec(entry).spec
    torch.manual_seed(0)
    return spec.model().eval(), spec


def _by_name(items: list[Any]) -> dict[str, Any]:
    return {i.name: i for i in items}


def test_export_runs_in_onnxruntime_at_every_batch_size(models_dir: Path) -> None:
    model, spec = _model("gate_models:mlp_spec")
    items = _by_name(checks.export(model, spec, {"batch_sizes": [1, 7, 64]}))
    assert items["onnx export"].passed, items["onnx export"].figure
    assert "Gemm" in items["onnx export"].detail["op_types"]
    for n in (1, 7, 64):
        assert items[f"batch {n}"].passed and items[f"batch {n}"].detail["cosine"] > 0.9999


def test_export_names_the_operator_onnx_lacks(models_dir: Path) -> None:
    model, spec = _model("gate_models:no_onnx_spec")
    (item,) = checks.export(model, spec, {})
    assert item.passed is False
    assert any("linalg_eig" in op for op in item.detail["operators"]), item.detail


def test_precision_flags_fp16_overflow(models_dir: Path) -> None:
    good = _by_name(checks.precision(*_model("gate_models:mlp_spec"), {}))
    assert good["fp32 vs bf16"].passed and good["fp32 vs fp16"].passed
    assert good["fp32 vs int8"].passed is not None  # it applies: the MLP has nn.Linear
    bad = _by_name(
        checks.precision(*_model("gate_models:fp16_overflow_spec"), {"dtypes": ["fp16"]})
    )
    fp16 = bad["fp32 vs fp16"]
    assert fp16.passed is False and fp16.detail["finite"] is False
    assert "worst sample" in fp16.figure
    conv = _by_name(
        checks.precision(*_model("gate_models:conv_spec"), {"dtypes": ["bf16", "int8"]})
    )
    assert conv["fp32 vs bf16"].passed


def test_batching_catches_batch_composition(models_dir: Path) -> None:
    quick = {"rounds": 6, "batch_sizes": [1, 4]}
    good = _by_name(checks.batching(*_model("gate_models:mlp_spec"), quick))
    assert all(i.passed for i in good.values()), [i.figure for i in good.values()]
    bad = _by_name(checks.batching(*_model("gate_models:batch_stats_spec"), quick))
    assert bad["batch independence"].passed is False
    assert "depend on batch composition" in bad["batch independence"].figure
    assert bad["memory stable"].passed  # it does not leak, it only mixes samples


def test_batching_catches_a_leak(models_dir: Path) -> None:
    items = _by_name(
        checks.batching(*_model("gate_models:leaky_spec"), {"rounds": 60, "growth_mib": 16})
    )
    leak = items["memory stable"]
    assert leak.passed is False and leak.detail["rss_growth_mib"] > 16
    assert set(leak.detail["latency"]) == {"1", "8", "32"}


def test_poison_outcomes(models_dir: Path) -> None:
    good = checks.poison(*_model("gate_models:mlp_spec"), {"huge_batch": 256})
    assert all(i.passed for i in good) and {i.detail["outcome"] for i in good} == {"handled"}
    plain = _by_name(checks.poison(*_model("gate_models:plain_spec"), {"huge_batch": 256}))
    assert plain["NaN"].detail["outcome"] == "silent-nonfinite" and not plain["NaN"].passed
    assert plain["empty batch"].detail["outcome"] == "internal error"
    assert plain["+1e4"].passed and plain["huge batch (256)"].passed
    lm = _by_name(checks.poison(*_model("gate_models:char_lm_spec"), {"huge_batch": 64}))
    assert lm["over-length (33)"].detail["outcome"] == "rejected"
    assert lm["id -1"].detail["outcome"] == "rejected" and lm["id -1"].passed
    assert lm["all zeros"].detail["outcome"] == "handled"


def _save(tmp_path: Path) -> tuple[Store, str]:
    from ledger.torch import save_checkpoint

    model, _ = _model("gate_models:mlp_spec")
    store = Store.init(tmp_path / ".ledger")
    info = save_checkpoint({"model": model, "step": 5}, step=5, store=store, run_id="run-a")
    return store, info.oid


def test_gate_on_a_ledger_checkpoint_is_bound_to_it(models_dir: Path, tmp_path: Path) -> None:
    from ledger.index.consistency import check_consistency
    from ledger.store.verify import verify_store

    store, oid = _save(tmp_path)
    spec = tmp_path / "gate.yaml"
    spec.write_text(
        f"entry: gate_models:mlp_spec\npath: {models_dir}\n"
        "precision: {dtypes: [bf16]}\npoison: {huge_batch: 64}\n"
    )
    result = run_gate("run-a", str(spec), store=store, checks=["precision", "poison"])
    assert result.record.passed and result.exit_code == 0
    assert result.record.checkpoint_digest == oid
    assert (result.record.run_id, result.record.step) == ("run-a", 5)
    stored = store_gate(store, result)
    assert store.refs.get(f"gates/{stored.record.gate_id}") == stored.oid
    assert stored.record.spec_digest is not None
    assert verify_store(store).problems == []
    assert check_consistency(store) == []


def test_gate_fails_when_a_required_check_fails(models_dir: Path, tmp_path: Path) -> None:
    model, _ = _model("gate_models:plain_spec")
    weights = tmp_path / "w.pt"
    torch.save(model.state_dict(), weights)
    r = run_gate(str(weights), "gate_models:plain_spec", checks=["poison"])
    assert not r.record.passed and r.exit_code == 1
    assert r.record.checkpoint_source == "torch"
    spec = tmp_path / "gate.yaml"
    spec.write_text(
        f"entry: gate_models:plain_spec\npath: {models_dir}\npoison: {{required: false}}\n"
    )
    lenient = run_gate(str(weights), str(spec), checks=["poison"])
    assert lenient.record.passed  # failures of a check the spec marks optional do not block


def test_gate_refuses_weights_that_do_not_fit(models_dir: Path, tmp_path: Path) -> None:
    from ledger.errors import UsageError

    weights = tmp_path / "w.pt"
    torch.save({"other.weight": torch.zeros(2)}, weights)
    with pytest.raises(UsageError, match="do not fit"):
        run_gate(str(weights), "gate_models:mlp_spec", checks=["poison"])


def test_gate_reads_safetensors(models_dir: Path, tmp_path: Path) -> None:
    from safetensors.torch import save_file

    from ledger._hashing import hash_file

    model, _ = _model("gate_models:mlp_spec")
    weights = tmp_path / "w.safetensors"
    save_file(model.state_dict(), str(weights))
    seen: list[Any] = []
    on_item: Callable[[Any], None] = seen.append
    r = run_gate(str(weights), "gate_models:mlp_spec", checks=["poison"], on_item=on_item)
    assert r.record.checkpoint_digest == hash_file(weights) and len(seen) == len(r.record.items)
