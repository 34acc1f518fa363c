"""The inference level: eager vs ``torch.compile`` vs low precision, on the same inputs, and
decoding with the model's KV cache vs one full forward (``kv-cache``, in ``kvcache.py``)."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import torch

from ..records.check import CheckItem
from ._tensors import as_tuple, call, compare, fmt
from .spec import Spec

__all__ = ["inference_checks", "variant_outputs"]


def _cast(inputs: Any, dtype: torch.dtype) -> Any:
    return tuple(t.to(dtype) if t.is_floating_point() else t for t in as_tuple(inputs))


def variant_outputs(model: Any, inputs: Any, name: str) -> tuple[Any, torch.dtype]:
    """The model's output under variant ``name`` (``bf16``, ``fp16``, ``bf16-autocast``,
    ``int8``, ``compile``), in float32, and the dtype whose tolerances apply."""
    # Deprecation warnings from torch's own internals (compile, quantization) say nothing about
    # the model; a caller that turns warnings into errors must not see a variant fail on them.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        return _variant(model, inputs, name)


def _variant(model: Any, inputs: Any, name: str) -> tuple[Any, torch.dtype]:
    with torch.no_grad():
        if name == "compile":
            compiled = torch.compile(copy.deepcopy(model))
            return call(compiled, inputs), torch.float32
        if name == "bf16-autocast":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return _float(call(model, inputs)), torch.bfloat16
        if name in ("bf16", "fp16"):
            dtype = torch.bfloat16 if name == "bf16" else torch.float16
            low = copy.deepcopy(model).to(dtype)
            return _float(call(low, _cast(inputs, dtype))), dtype
        if name == "int8":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                from torch.ao.quantization import quantize_dynamic

                q = quantize_dynamic(  # type: ignore[no-untyped-call]
                    copy.deepcopy(model), {torch.nn.Linear}, dtype=torch.qint8
                )
            return call(q, inputs), torch.qint8
    raise ValueError(f"unknown precision variant {name!r}")


def _float(out: Any) -> Any:
    if isinstance(out, torch.Tensor):
        return out.float() if out.is_floating_point() else out
    if isinstance(out, (tuple, list)):
        return type(out)(_float(o) for o in out)
    if isinstance(out, dict):
        return {k: _float(v) for k, v in out.items()}
    return out


def judge(
    level: str,
    name: str,
    run: Callable[[], tuple[Any, torch.dtype]],
    ref: Any,
    min_cos: float,
    required: bool = True,
) -> CheckItem:
    try:
        out, dtype = run()
    except Exception as e:
        msg = str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__
        return CheckItem(
            level=level,
            name=name,
            passed=None,
            required=required,
            figure=f"not supported here: {type(e).__name__}: {msg}",
            detail={"error": msg},
        )
    c = compare(out, ref, dtype)
    ok = c.finite and c.cosine >= min_cos and c.close
    figure = f"cosine {c.cosine:.6f} (goal >= {min_cos}), max |diff| {fmt(c.max_abs)}"
    if not c.close:
        figure += ", not close at the dtype's tolerance"
    if not c.finite:
        figure += ", non-finite outputs"
    if c.worst_sample is not None and not ok:
        figure += f"; worst sample {c.worst_sample}"
    return CheckItem(
        level=level, name=name, passed=ok, required=required, figure=figure, detail=c.to_json()
    )


def inference_checks(spec: Spec, settings: dict[str, Any]) -> list[CheckItem]:
    n = int(settings.get("batch_size", spec.batch_size))
    min_cos = float(settings.get("cosine", 0.999))
    variants = list(settings.get("variants", ["compile", "bf16-autocast", "fp16", "kv-cache"]))
    torch.manual_seed(0)
    model = spec.model().eval()
    inputs, _ = spec.batch(n)
    with torch.no_grad():
        ref = call(model, inputs)
    items = []
    for v in variants:
        if v == "kv-cache":
            from .kvcache import kv_cache_item

            items.append(
                kv_cache_item(
                    model, spec, settings, level="inference", name="full forward vs kv-cache"
                )
            )
            continue
        # A variant this machine cannot run (no fp16 kernel on CPU) is skipped, not failed.
        run = lambda v=v: variant_outputs(model, inputs, v)  # noqa: E731
        items.append(judge("inference", f"eager vs {v}", run, ref, min_cos))
    return items
