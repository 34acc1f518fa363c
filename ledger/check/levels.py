"""The ladder's levels, cheapest first. Each takes the loaded spec and its settings and returns
its checks; a level never raises for a model that fails it (that is a failed check)."""

from __future__ import annotations

import math
import traceback
from collections.abc import Callable
from typing import Any

import torch

from ..records.check import CheckItem
from ._tensors import call, flat, fmt
from .spec import Spec

__all__ = ["LEVELS", "Level"]

Level = Callable[[Spec, dict[str, Any]], list[CheckItem]]


def _item(level: str, name: str, passed: bool | None, figure: str, **detail: Any) -> CheckItem:
    return CheckItem(level=level, name=name, passed=passed, figure=figure, detail=detail)


def _error(level: str, name: str, e: BaseException) -> CheckItem:
    tb = traceback.format_exception_only(type(e), e)[-1].strip()
    return _item(level, name, False, f"raised {tb[:300]}", error=tb)


def _fresh(spec: Spec, seed: int = 0) -> tuple[Any, Any]:
    torch.manual_seed(seed)
    model = spec.model()
    return model, spec.optimizer([p for p in model.parameters() if p.requires_grad])


def _trainable(model: Any) -> list[tuple[str, torch.nn.Parameter]]:
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]


def static(spec: Spec, settings: dict[str, Any]) -> list[CheckItem]:
    try:
        model = spec.model()
    except Exception as e:
        return [_error("static", "model builds", e)]
    params = list(model.named_parameters())
    total = sum(p.numel() for _, p in params)
    trainable = sum(p.numel() for _, p in params if p.requires_grad)
    dtypes = sorted({str(p.dtype).removeprefix("torch.") for _, p in params})
    devices = sorted({str(p.device) for _, p in params})
    bad = [n for n, p in params if p.is_floating_point() and not bool(torch.isfinite(p).all())]
    frozen = [n for n, p in params if not p.requires_grad]
    items = [
        _item(
            "static",
            "parameters",
            trainable > 0 and not bad,
            f"{total:,} parameters ({trainable:,} trainable), dtypes {dtypes}, devices {devices}",
            total=total,
            trainable=trainable,
            dtypes=dtypes,
            devices=devices,
            frozen=frozen[:50],
            nonfinite=bad[:50],
        ),
        _item(
            "static",
            "one device",
            len(devices) <= 1,
            f"{len(devices)} device(s): {', '.join(devices) or 'none'}",
        ),
    ]
    return items


def shapes(spec: Spec, settings: dict[str, Any]) -> list[CheckItem]:
    n = int(settings.get("batch_size", spec.batch_size))
    try:
        model, _ = _fresh(spec)
        inputs, target = spec.batch(n)
        with torch.no_grad():
            out = call(model, inputs)
        loss = spec.loss(out, target)
    except Exception as e:
        return [_error("shapes", "forward", e)]
    outs = flat(out)
    shown = [f"{tuple(t.shape)} {str(t.dtype).removeprefix('torch.')}" for t in outs]
    batch_ok = all(t.dim() >= 1 and t.shape[0] == n for t in outs) and bool(outs)
    float_ok = all(t.is_floating_point() for t in outs)
    scalar = isinstance(loss, torch.Tensor) and loss.dim() == 0
    return [
        _item(
            "shapes",
            "output",
            batch_ok and float_ok,
            f"batch {n} -> {'; '.join(shown) or 'no tensor output'}",
            outputs=shown,
            batch_axis_ok=batch_ok,
            floating=float_ok,
        ),
        _item(
            "shapes",
            "loss is a scalar",
            scalar,
            f"loss shape {tuple(loss.shape) if isinstance(loss, torch.Tensor) else type(loss)}",
        ),
    ]


def one_step(spec: Spec, settings: dict[str, Any]) -> list[CheckItem]:
    n = int(settings.get("batch_size", spec.batch_size))
    try:
        model, _ = _fresh(spec)
        model.train()
        inputs, target = spec.batch(n)
        loss = spec.loss(call(model, inputs), target)
        value = float(loss.detach())
        loss.backward()
    except Exception as e:
        return [_error("one-step", "forward and backward", e)]
    params = _trainable(model)
    none = [name for name, p in params if p.grad is None]
    nonfinite = [
        name for name, p in params if p.grad is not None and not bool(torch.isfinite(p.grad).all())
    ]
    zero = [name for name, p in params if p.grad is not None and not bool(p.grad.any())]
    ok = not none and not nonfinite
    good = len(params) - len(none) - len(nonfinite)
    figure = f"{good}/{len(params)} trainable tensors got a finite gradient"
    if none:
        figure += f"; no gradient: {', '.join(none[:8])}" + (" ..." if len(none) > 8 else "")
    if nonfinite:
        figure += f"; non-finite: {', '.join(nonfinite[:8])}"
    return [
        _item("one-step", "loss finite", math.isfinite(value), f"loss {fmt(value)}", loss=value),
        _item(
            "one-step",
            "gradients",
            ok,
            figure,
            no_gradient=none,
            nonfinite=nonfinite,
            all_zero=zero,
        ),
    ]


def overfit(spec: Spec, settings: dict[str, Any]) -> list[CheckItem]:
    steps = int(settings.get("steps", 200))
    factor = float(settings.get("factor", 10.0))
    n = int(settings.get("batch_size", min(spec.batch_size, 8)))
    curve: list[float] = []
    try:
        model, opt = _fresh(spec)
        model.train()
        inputs, target = spec.batch(n)
        for _ in range(steps):
            opt.zero_grad(set_to_none=True)
            loss = spec.loss(call(model, inputs), target)
            loss.backward()
            opt.step()
            curve.append(float(loss.detach()))
            if not math.isfinite(curve[-1]) or curve[-1] <= curve[0] / factor:
                break
    except Exception as e:
        return [_error("overfit", "tiny batch", e)]
    first, best = curve[0], min(curve)
    ok = math.isfinite(best) and best <= first / factor
    ratio = first / best if best > 0 else math.inf
    figure = (
        f"loss {fmt(first)} -> {fmt(best)} (/{fmt(ratio)}) in {len(curve)} steps, "
        f"goal /{fmt(factor)}"
    )
    stride = max(1, len(curve) // 50)
    return [
        _item(
            "overfit",
            f"{n} samples",
            ok,
            figure,
            curve=[c if math.isfinite(c) else str(c) for c in curve[::stride]],
            stride=stride,
            steps=len(curve),
            factor=factor,
        )
    ]


def _norm(tensors: list[torch.Tensor]) -> float:
    return float(torch.sqrt(sum((t.detach().double() ** 2).sum() for t in tensors)))  # type: ignore[arg-type]


def stability(spec: Spec, settings: dict[str, Any]) -> list[CheckItem]:
    """From the bound run's ``watch`` metrics when it has them, else a short run here."""
    store, run_id = settings.get("_store"), settings.get("_run_id")
    if store is not None and run_id and settings.get("source", "auto") != "short-run":
        from .recorded import recorded_stability

        item = recorded_stability(store, run_id, settings)
        if item is not None:
            return [item]
    return _short_run(spec, settings)


def _short_run(spec: Spec, settings: dict[str, Any]) -> list[CheckItem]:
    steps = int(settings.get("steps", 20))
    clip = settings.get("clip")
    max_ratio = float(settings.get("max_update_ratio", 0.1))
    n = int(settings.get("batch_size", spec.batch_size))
    rows: list[dict[str, Any]] = []
    first_bad: int | None = None
    why = ""
    try:
        model, opt = _fresh(spec)
        sched = spec.scheduler(opt) if spec.scheduler else None
        model.train()
        params = [p for _, p in _trainable(model)]
        inputs, target = spec.batch(n)
        for step in range(1, steps + 1):
            opt.zero_grad(set_to_none=True)
            loss = spec.loss(call(model, inputs), target)
            loss.backward()
            grads = [p.grad for p in params if p.grad is not None]
            before = _norm(grads)
            if clip is not None:
                torch.nn.utils.clip_grad_norm_(params, float(clip))
            after = _norm([p.grad for p in params if p.grad is not None])
            old = [p.detach().clone() for p in params]
            lr = float(opt.param_groups[0]["lr"])
            opt.step()
            if sched is not None:
                sched.step()
            delta = _norm([p.detach() - o for p, o in zip(params, old, strict=True)])
            ratio = delta / (_norm(old) + 1e-12)
            nonfinite = sum(int((~torch.isfinite(g)).sum()) for g in grads)
            value = float(loss.detach())
            rows.append(
                {
                    "step": step,
                    "loss": value,
                    "grad_norm": before,
                    "grad_norm_clipped": after,
                    "update_ratio": ratio,
                    "lr": lr,
                    "nonfinite_grads": nonfinite,
                }
            )
            if first_bad is None:
                if not math.isfinite(value) or nonfinite or not math.isfinite(before):
                    first_bad, why = step, "non-finite loss or gradient"
                elif ratio > max_ratio:
                    first_bad, why = step, f"update ratio {fmt(ratio)} > {fmt(max_ratio)}"
    except Exception as e:
        return [_error("stability", "short run", e)]
    ratios = [r["update_ratio"] for r in rows]
    gn = [r["grad_norm"] for r in rows]
    figure = (
        f"{len(rows)} steps: grad norm {fmt(min(gn))}..{fmt(max(gn))}, update ratio "
        f"{fmt(min(ratios))}..{fmt(max(ratios))}, lr {fmt(rows[0]['lr'])}->{fmt(rows[-1]['lr'])}"
    )
    if first_bad is not None:
        figure += f"; first bad step {first_bad}: {why}"
    clean = [
        {k: (v if not isinstance(v, float) or math.isfinite(v) else str(v)) for k, v in r.items()}
        for r in rows
    ]
    return [
        _item(
            "stability",
            "short run",
            first_bad is None,
            figure,
            steps=clean,
            first_bad_step=first_bad,
        )
    ]


def performance(spec: Spec, settings: dict[str, Any]) -> list[CheckItem]:
    from .perf import measure

    return measure(spec, settings)


def inference(spec: Spec, settings: dict[str, Any]) -> list[CheckItem]:
    from .infer import inference_checks

    return inference_checks(spec, settings)


def checkpoint(spec: Spec, settings: dict[str, Any]) -> list[CheckItem]:
    from .recovery import recovery_checks

    return recovery_checks(spec, settings)


def distributed(spec: Spec, settings: dict[str, Any]) -> list[CheckItem]:
    from .dist import distributed_checks

    return distributed_checks(spec, settings)


LEVELS: dict[str, Level] = {
    "static": static,
    "shapes": shapes,
    "one-step": one_step,
    "overfit": overfit,
    "stability": stability,
    "distributed": distributed,
    "checkpoint": checkpoint,
    "performance": performance,
    "inference": inference,
}
