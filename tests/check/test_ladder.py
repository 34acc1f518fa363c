"""The verification ladder on small real models, and models that must fail each level."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from ledger.check import run_ladder
from ledger.check.levels import LEVELS
from ledger.check.spec import load_spec
from ledger.errors import UsageError

pytestmark = pytest.mark.torch


def _level(entry: str, level: str, **settings: object) -> list:  # type: ignore[type-arg]
    return LEVELS[level](load_spec(entry).spec, dict(settings))


def test_good_mlp_passes_the_cheap_levels(models_dir: Path) -> None:
    r = run_ladder("gate_models:mlp_spec", ["static", "shapes", "one-step", "overfit", "stability"])
    assert r.record.passed, [i.figure for i in r.record.items]
    names = [(i.level, i.name) for i in r.record.items]
    assert ("one-step", "gradients") in names and ("overfit", "8 samples") in names
    static = next(i for i in r.record.items if i.name == "parameters")
    assert static.detail["total"] == 8 * 32 + 32 + 32 * 3 + 3
    assert "(8, 3) float32" in next(i for i in r.record.items if i.name == "output").figure


def test_unused_head_is_named_and_the_ladder_stops(models_dir: Path) -> None:
    r = run_ladder("gate_models:unused_head_spec", ["static", "one-step", "overfit"])
    assert not r.record.passed and r.exit_code == 1
    assert r.record.stopped_at == "one-step"
    assert all(i.level != "overfit" for i in r.record.items)
    grads = next(i for i in r.record.items if i.name == "gradients")
    assert grads.detail["no_gradient"] == ["aux_head.weight", "aux_head.bias"]
    assert "aux_head.weight" in grads.figure


def test_keep_going_runs_every_level(models_dir: Path) -> None:
    r = run_ladder("gate_models:unused_head_spec", ["one-step", "overfit"], keep_going=True)
    assert r.record.stopped_at is None and not r.record.passed
    assert any(i.level == "overfit" for i in r.record.items)


def test_frozen_model_fails_static(models_dir: Path) -> None:
    (item, _) = _level("gate_models:frozen_spec", "static")
    assert item.passed is False and "(0 trainable)" in item.figure


def test_overfit_fails_with_the_curve(models_dir: Path) -> None:
    (item,) = _level("gate_models:no_learning_spec", "overfit", steps=30)
    assert item.passed is False
    assert len(item.detail["curve"]) == 30 and "in 30 steps" in item.figure


def test_stability_names_the_first_bad_step(models_dir: Path) -> None:
    (item,) = _level("gate_models:exploding_spec", "stability", steps=5)
    assert item.passed is False and item.detail["first_bad_step"] == 1
    assert "first bad step 1" in item.figure
    (ok,) = _level("gate_models:mlp_spec", "stability", steps=5, clip=0.5)
    assert ok.passed, ok.figure
    assert all(s["grad_norm_clipped"] <= 0.5 + 1e-6 for s in ok.detail["steps"])
    assert ok.detail["steps"][2]["lr"] == pytest.approx(0.005)  # StepLR(2, 0.5) stepped


def test_checkpoint_recovery_continues_exactly(models_dir: Path) -> None:
    (item,) = _level("gate_models:mlp_spec", "checkpoint", _source="gate_models:mlp_spec", steps=2)
    assert item.passed, item.figure
    assert item.detail["resumed"]["resumed_step"] == 2


def test_checkpoint_recovery_catches_state_outside_state_dict(models_dir: Path) -> None:
    entry = "gate_models:hidden_state_spec"
    (item,) = _level(entry, "checkpoint", _source=entry, steps=2)
    assert item.passed is False
    assert (
        "loss" in item.detail["differs"] and "first differs at step 4" in item.figure
    )  # step 3 starts from restored weights


def test_performance_reports_tokens_per_second(models_dir: Path) -> None:
    (item,) = _level("gate_models:char_lm_spec", "performance", warmup=1, steps=2, repeats=2)
    d = item.detail
    assert item.passed and d["tokens_per_s"] == pytest.approx(d["samples_per_s"] * 16)
    assert len(d["step_seconds"]) == 2 and 0 <= d["dataloader_fraction"] <= 1
    assert d["peak_rss_bytes"] > 0
    (limited,) = _level("gate_models:mlp_spec", "performance", steps=1, repeats=1, max_step_ms=1e-6)
    assert limited.passed is False


def test_inference_low_precision(models_dir: Path) -> None:
    variants = ["bf16-autocast", "fp16"]
    good = _level("gate_models:mlp_spec", "inference", variants=variants)
    assert all(i.passed for i in good), [i.figure for i in good]
    bad = _level("gate_models:fp16_overflow_spec", "inference", variants=variants)
    fp16 = next(i for i in bad if i.name == "eager vs fp16")
    assert fp16.passed is False and "non-finite" in fp16.figure


@pytest.mark.slow
def test_inference_compiled(models_dir: Path) -> None:
    (item,) = _level("gate_models:conv_spec", "inference", variants=["compile"])
    assert item.passed, item.figure


def test_bad_specs_are_usage_errors(models_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not module:function"):
        load_spec("gate_models")
    with pytest.raises(UsageError, match="cannot import"):
        load_spec("no_such_module_here:spec")
    with pytest.raises(UsageError, match="has no function"):
        load_spec("gate_models:nope")
    bad = tmp_path / "spec.yaml"
    bad.write_text("overfit: {steps: 3}\n")
    with pytest.raises(UsageError, match="no 'entry"):
        load_spec(str(bad))
    with pytest.raises(UsageError, match="unknown level"):
        run_ladder("gate_models:mlp_spec", ["static", "warp-speed"])


def test_yaml_settings_reach_the_level(models_dir: Path, tmp_path: Path) -> None:
    spec = tmp_path / "check.yaml"
    spec.write_text(
        f"entry: gate_models:no_learning_spec\npath: {models_dir}\noverfit: {{steps: 4}}\n"
    )
    r = run_ladder(str(spec), ["overfit"])
    (item,) = r.record.items
    assert item.detail["steps"] == 4 and r.raw == spec.read_bytes()


@pytest.mark.distributed
def test_distributed_consistency(models_dir: Path) -> None:
    entry = "gate_models:mlp_spec"
    good = {i.name: i for i in _level(entry, "distributed", _source=entry)}
    assert all(i.passed for i in good.values()), [i.figure for i in good.values()]
    assert set(good) == {
        "gradient accumulation",
        "2 ranks vs 1 process",
        "sampler shards",
        "per-rank seeds",
    }
    assert len(set(good["per-rank seeds"].detail["seeds"])) == 2
    entry = "gate_models:batch_stats_spec"
    bad = {i.name: i for i in _level(entry, "distributed", _source=entry)}
    assert bad["2 ranks vs 1 process"].passed is False
    assert bad["gradient accumulation"].passed is False
