"""watch(): what it logs every N steps, and alerts that name the first bad step and parameter."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch import nn

from ledger.runtime import RankInfo, Run, _warn, set_current_run
from ledger.runtime.ingest import collect_runtime
from ledger.store import Store
from ledger.torch import watch


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    _warn.reset_warnings()
    set_current_run(None)
    yield
    set_current_run(None)


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
        self.unused = nn.Linear(2, 2)  # trainable but never gets a gradient

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.body(x)
        return out


def _model() -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(0)
    model = _Net()
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


def _loss(model: nn.Module, poison: bool = False) -> torch.Tensor:
    x = torch.randn(16, 4)
    if poison:
        x[0, 0] = float("nan")
    return nn.functional.mse_loss(model(x), torch.zeros(16, 1))


@pytest.mark.parametrize("every", [3, 1])
def test_logs_every_n_steps_with_clipping_and_update_ratio(tmp_path: Path, every: int) -> None:
    """every=1 reuses one step's parameter copy for the next: its ratios must be as exact."""
    run = Run(run_dir=tmp_path, rank=RankInfo())
    model, opt = _model()
    w = watch(model, opt, every=every, clip=0.01, run=run)
    logged = []
    for _ in range(7):
        loss = _loss(model)
        loss.backward()  # type: ignore[no-untyped-call]
        before = [p.detach().clone() for p in model.parameters()]
        values = w.step(loss)
        opt.step()
        opt.zero_grad()
        if values is not None:
            after = [p.detach() for p in model.parameters()]
            d = math.sqrt(
                sum(float(((a - b) ** 2).sum()) for a, b in zip(after, before, strict=True))
            )
            t = math.sqrt(sum(float((b**2).sum()) for b in before))
            logged.append((values, d / (t + 1e-12)))
    w.close()
    run.close()
    assert len(logged) == len(range(0, 7, every))  # steps 0, 3, 6 (every=3)
    values, _ = logged[0]
    assert values["params_without_grad"] == 2 and values["lr"] == 0.1
    assert values["grad_norm"] > 0.01 and values["grad_norm_clipped"] == pytest.approx(
        0.01, rel=1e-4
    )
    assert values["nonfinite_grads"] == 0 == values["nonfinite_loss"]
    points = [
        json.loads(x) for x in (tmp_path / "metrics" / "rank-0.jsonl").read_text().splitlines()[1:]
    ]
    ratios = [
        (p["s"], p["v"]["watch/update_ratio"]) for p in points if "watch/update_ratio" in p["v"]
    ]
    assert [s for s, _ in ratios] == list(range(0, 7, every))
    assert [r for _, r in ratios] == pytest.approx([r for _, r in logged], rel=1e-6)


def test_update_ratio_after_the_model_changes_dtype(tmp_path: Path) -> None:
    """``model.double()`` between steps changes each parameter's dtype in place: the copy
    kept from the last step (float32) must not be reused, or θ before the update would be
    rounded to float32 and a small update ratio measured as that rounding."""
    run = Run(run_dir=tmp_path, rank=RankInfo())
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    w = watch(model, opt, every=1, run=run)
    expected = []
    for i in range(4):
        if i == 2:
            model.double()
        x = torch.randn(8, 4, dtype=next(model.parameters()).dtype)
        loss = model(x).sum()
        loss.backward()  # type: ignore[no-untyped-call]
        before = [p.detach().clone() for p in model.parameters()]
        w.step(loss)
        opt.step()
        opt.zero_grad()
        after = [p.detach() for p in model.parameters()]
        d = math.sqrt(sum(float(((a - b) ** 2).sum()) for a, b in zip(after, before, strict=True)))
        expected.append(d / (math.sqrt(sum(float((b**2).sum()) for b in before)) + 1e-12))
    assert next(model.parameters()).dtype == torch.float64
    w.close()
    run.close()
    points = [
        json.loads(x) for x in (tmp_path / "metrics" / "rank-0.jsonl").read_text().splitlines()[1:]
    ]
    ratios = [p["v"]["watch/update_ratio"] for p in points if "watch/update_ratio" in p["v"]]
    assert ratios == pytest.approx(expected, rel=1e-6)


def test_first_bad_step_and_parameter_are_alerted_once(
    tmp_path: Path, store: Store, capsys: pytest.CaptureFixture[str]
) -> None:
    run = Run(run_dir=tmp_path, rank=RankInfo())
    model, opt = _model()
    w = watch(model, opt, every=5, clip=1.0, run=run)
    for step in range(12):
        loss = _loss(model, poison=step == 7)
        loss.backward()  # type: ignore[no-untyped-call]
        w.step(loss)
        opt.step()  # NaN grads make the weights NaN from step 7 on
        opt.zero_grad()
    run.close()
    err = capsys.readouterr().err
    assert err.count("ALERT") == 3  # loss, grad, param: each kind once
    cap = collect_runtime(tmp_path, store)
    by_kind = {a.kind: a for a in cap.alerts}
    assert by_kind["nonfinite-loss"].step == 7  # exact although checked every 5 steps
    assert (
        by_kind["nonfinite-grad"].step == 7
        and by_kind["nonfinite-grad"].parameter == "body.0.weight"
    )
    assert by_kind["nonfinite-grad"].last_clean_step == 5
    assert (
        by_kind["nonfinite-param"].step == 10
        and by_kind["nonfinite-param"].parameter == "body.0.weight"
    )
    loss_summary = next(m for m in cap.metrics if m.name == "watch/loss")
    assert loss_summary.first_nonfinite_step == 10  # the logged series only sees steps 0, 5, 10


def test_without_clip_or_optimizer(tmp_path: Path) -> None:
    run = Run(run_dir=tmp_path, rank=RankInfo())
    model, _ = _model()
    w = watch(model, every=1, run=run, prefix="")
    loss = _loss(model)
    loss.backward()  # type: ignore[no-untyped-call]
    values = w.step(loss, step=41)
    assert values is not None and "lr" not in values and "grad_norm_clipped" not in values
    norm = math.sqrt(
        sum(float((p.grad**2).sum()) for p in model.parameters() if p.grad is not None)
    )
    assert values["grad_norm"] == pytest.approx(norm)
    assert run.points()[-1][1] == 41


def test_bad_every_is_rejected() -> None:
    model, opt = _model()
    with pytest.raises(ValueError, match="every"):
        watch(model, opt, every=0)


def test_half_precision_norms_do_not_overflow(tmp_path: Path) -> None:
    """Per-tensor norms are taken in float32 at least: a float16 gradient whose norm overflows
    float16 still gives a finite grad_norm, no non-finite count, and the exact update ratio."""
    run = Run(run_dir=tmp_path, rank=RankInfo())
    model = nn.Linear(64, 64).half()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    w = watch(model, opt, every=1, run=run)
    for p in model.parameters():
        p.grad = torch.full_like(p, 3000.0)  # the norm, 1.9e5, is above float16's 65504
    before = [p.detach().double().clone() for p in model.parameters()]
    values = w.step(torch.tensor(1.0))
    opt.step()
    w.close()
    assert values is not None
    n = sum(p.numel() for p in model.parameters())
    assert values["grad_norm"] == pytest.approx(3000.0 * math.sqrt(n), rel=1e-3)
    assert values["nonfinite_grads"] == 0 == values["nonfinite_params"]
    after = [p.detach().double() for p in model.parameters()]
    d = math.sqrt(sum(float(((a - b) ** 2).sum()) for a, b in zip(after, before, strict=True)))
    t = math.sqrt(sum(float((b**2).sum()) for b in before))
    run.close()
    points = [
        json.loads(x) for x in (tmp_path / "metrics" / "rank-0.jsonl").read_text().splitlines()[1:]
    ]
    logged = [p["v"]["watch/update_ratio"] for p in points if "watch/update_ratio" in p["v"]]
    assert logged == [pytest.approx(d / t, rel=1e-3)]
