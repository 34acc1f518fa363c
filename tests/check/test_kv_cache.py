"""The ``kv-cache`` check (inference level, gate group ``serving``): token-by-token decoding with
the model's cache gives the full forward's logits at every position.

A tiny GPT-2 built from a config passes; three GPT-2s with a real cache bug fail at the position
the bug first shows; a GRU decoder with a ``decode`` hook passes, and fails when the hook drops
its hidden state; a model with neither is skipped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from ledger.check import Spec, run_ladder  # noqa: E402
from ledger.check.levels import LEVELS  # noqa: E402
from ledger.check.spec import load_spec  # noqa: E402
from ledger.gate import checks, run_gate  # noqa: E402

pytestmark = pytest.mark.torch


def _kv(entry: str, **settings: Any) -> Any:
    (item,) = LEVELS["inference"](load_spec(entry).spec, {"variants": ["kv-cache"], **settings})
    assert (item.level, item.name) == ("inference", "full forward vs kv-cache")
    return item


def test_tiny_gpt2_decodes_with_its_cache_like_the_full_forward(models_dir: Path) -> None:
    item = _kv("kv_models:gpt2_spec")
    assert item.passed, item.figure
    d = item.detail
    assert d["how"] == "the model's KV cache (use_cache, cache)" and d["first_position"] is None
    assert d["positions"] == 12 and d["samples"] == 4 and len(d["per_position_max_abs"]) == 12
    assert d["max_abs"] < 1e-4 and d["cosine"] > 0.999999
    assert item.figure.startswith("12 positions × 4 samples decoded with the model's KV cache")


@pytest.mark.parametrize(
    ("entry", "position"),
    [
        # Position 0 is numbered 0 either way; decoded token 1 gets position 0 instead of 1.
        ("kv_models:gpt2_position_restart_spec", 1),
        # Token 0's key is the only one stored right; token 1 attends to two copies of it.
        ("kv_models:gpt2_stale_key_spec", 1),
        # One decoded query has no future key to see: decoding is right, and the full forward
        # is wrong from position 0 (it sees token 1).
        ("kv_models:gpt2_mask_off_by_one_spec", 0),
    ],
)
def test_each_cache_bug_is_named_at_its_first_position(
    models_dir: Path, entry: str, position: int
) -> None:
    item = _kv(entry)
    d = item.detail
    assert item.passed is False, item.figure
    assert d["first_position"] == position, item.figure
    assert f"first differs at position {position} (sample " in item.figure
    # Before it, every position agrees within float32's tolerance; at it, far beyond.
    assert all(x < 1e-4 for x in d["per_position_max_abs"][:position])
    assert d["max_abs_at_first"] == d["per_position_max_abs"][position] > 1e-3


def test_gru_decode_hook_passes_and_fails_without_its_state(models_dir: Path) -> None:
    good = _kv("kv_models:gru_spec")
    assert good.passed and good.detail["how"] == "the spec's decode hook", good.figure
    bad = _kv("kv_models:gru_state_dropped_spec")
    assert bad.passed is False and bad.detail["first_position"] == 1, bad.figure
    assert bad.detail["per_position_max_abs"][0] < 1e-5  # the first step starts from zeros too


def test_a_model_without_cache_or_hook_is_skipped_not_failed(
    models_dir: Path, tmp_path: Path
) -> None:
    spec = tmp_path / "check.yaml"
    spec.write_text(
        f"entry: kv_models:gru_no_hook_spec\npath: {models_dir}\n"
        "inference: {variants: [kv-cache]}\n"
    )
    r = run_ladder(str(spec), ["inference"])
    (item,) = r.record.items
    assert item.passed is None and "decode hook (Spec(decode=...))" in item.figure
    assert item.figure.startswith("skipped: ") and r.record.passed and r.exit_code == 0


class _StepOnly(torch.nn.Module):
    """transformers-4 style: ``past_key_values`` in, ``past_key_values`` out (a dict)."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(50, 8)
        self.gru = torch.nn.GRU(8, 8, batch_first=True)
        self.head = torch.nn.Linear(8, 50)

    def forward(
        self, ids: torch.Tensor, past_key_values: Any = None, use_cache: bool = False
    ) -> dict[str, Any]:
        out, h = self.gru(self.emb(ids), past_key_values)
        return {"logits": self.head(out), "past_key_values": h if use_cache else None}


def _step_only_spec(decode: Any = None) -> Spec:
    from kv_models import _ids

    return Spec(
        model=_StepOnly, batch=_ids, loss=lambda o, t: o, optimizer=lambda p: None, decode=decode
    )


def test_past_key_values_by_its_transformers_4_name(models_dir: Path) -> None:
    from ledger.check.kvcache import kv_cache_item

    torch.manual_seed(0)
    model = _StepOnly().eval()
    item = kv_cache_item(model, _step_only_spec(), {}, level="inference", name="kv")
    assert item.passed and item.detail["how"] == "the model's KV cache (use_cache, past_key_values)"


def test_a_hook_that_returns_no_state_pair_fails_with_the_reason(models_dir: Path) -> None:
    from ledger.check.kvcache import kv_cache_item

    torch.manual_seed(0)
    model = _StepOnly().eval()
    spec = _step_only_spec(decode=lambda m, state, ids: m(ids)["logits"])
    item = kv_cache_item(model, spec, {}, level="inference", name="kv")
    assert item.passed is False and "not a (logits, state) pair" in item.figure


def test_gate_group_serving(models_dir: Path, tmp_path: Path) -> None:
    spec = load_spec("kv_models:gpt2_spec").spec
    torch.manual_seed(0)
    weights = tmp_path / "gpt2.pt"
    torch.save(spec.model().state_dict(), weights)
    good = run_gate(str(weights), "kv_models:gpt2_spec", checks=["serving"])
    (item,) = good.record.items
    assert (item.level, item.name, item.passed) == ("serving", "kv-cache", True), item.figure
    assert good.exit_code == 0
    bad = run_gate(str(weights), "kv_models:gpt2_stale_key_spec", checks=["serving"])
    assert bad.exit_code == 1 and bad.record.items[0].detail["first_position"] == 1
    gru = load_spec("kv_models:gru_no_hook_spec").spec
    (skipped,) = checks.serving(gru.model().eval(), gru, {"kv_length": 4})
    assert skipped.passed is None and skipped.level == "serving"
