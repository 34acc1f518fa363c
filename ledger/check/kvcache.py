"""Decoding with a KV cache equals the full forward: the inference level's ``kv-cache`` variant
and the gate's ``serving/kv-cache`` check (imports torch).

The first input of the spec's batch holds the token ids, ``[batch, length]`` (the length on
``spec.sequence_axis``, else axis 1). One full forward gives the logits at every position; then
the same ids are fed one token at a time, each step given the state the previous step returned,
and the logits of step ``t`` must equal the full forward's at position ``t``. A cache bug (a
position offset lost, a stale entry reused, a mask that lets a token see its future) shows as
the first position where they part.

How the model is driven, in this order: the spec's ``decode(model, state, next_ids) ->
(logits, state)`` hook (``state`` is None on the first call); else a Hugging Face-style forward
that takes ``use_cache`` and ``past_key_values`` (``cache`` in transformers 5) and returns them
with the logits; else the check is skipped with the reason, not failed.
"""

from __future__ import annotations

import inspect
import math
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from ..records.check import CheckItem
from ._tensors import as_tuple, fmt, tolerances
from .spec import Spec

__all__ = ["Decoder", "decoder_for", "kv_cache_item"]

_CACHE_NAMES = ("past_key_values", "cache")  # transformers 4, transformers 5
_MAX_PER_POSITION = 512  # per-position figures kept in the record


@dataclass
class Decoder:
    """How one model is run: ``full(ids)`` gives the logits at every position, ``step(state,
    next_ids)`` the logits of the new token(s) and the state for the next step."""

    how: str  # said in the figure
    full: Callable[[torch.Tensor], torch.Tensor]
    step: Callable[[Any, torch.Tensor], tuple[torch.Tensor, Any]]


def _logits(out: Any) -> torch.Tensor:
    """A tensor, an output with ``logits`` (a dict or a transformers ModelOutput), or a tuple
    whose first item is the logits."""
    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, Mapping) and isinstance(out.get("logits"), torch.Tensor):
        return out["logits"]  # type: ignore[no-any-return]
    if isinstance(getattr(out, "logits", None), torch.Tensor):
        return out.logits  # type: ignore[no-any-return]
    if isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor):
        return out[0]
    raise TypeError(f"the model's output ({type(out).__name__}) holds no logits tensor")


def _cache_name(model: Any) -> str | None:
    """The keyword a transformers-style forward takes its cache by, when it also takes
    ``use_cache``; None for any other model."""
    forward = getattr(model, "forward", None)
    if forward is None:
        return None
    try:
        params = inspect.signature(forward).parameters
    except (TypeError, ValueError):
        return None
    if "use_cache" not in params:
        return None
    return next((n for n in _CACHE_NAMES if n in params), None)


def _returned_cache(out: Any) -> Any:
    for name in _CACHE_NAMES:
        value = out.get(name) if isinstance(out, Mapping) else getattr(out, name, None)
        if value is not None:
            return value
    raise TypeError(
        f"the model took use_cache=True but its output ({type(out).__name__}) returned no cache"
    )


def decoder_for(model: Any, spec: Spec) -> Decoder | str:
    """The way to drive ``model`` token by token, or why there is none."""
    hook = spec.decode
    if hook is not None:

        def hook_step(state: Any, ids: torch.Tensor) -> tuple[torch.Tensor, Any]:
            got = hook(model, state, ids)
            if not isinstance(got, tuple) or len(got) != 2:
                raise TypeError(
                    f"the spec's decode hook returned {type(got).__name__}, "
                    "not a (logits, state) pair"
                )
            return _logits(got[0]), got[1]

        return Decoder("the spec's decode hook", lambda ids: _logits(model(ids)), hook_step)
    name = _cache_name(model)
    if name is None:
        return (
            "the model's forward takes no use_cache/past_key_values and the spec has no "
            "decode hook (Spec(decode=...)): nothing to decode with"
        )

    def hf_step(state: Any, ids: torch.Tensor) -> tuple[torch.Tensor, Any]:
        kwargs: dict[str, Any] = {"use_cache": True}
        if state is not None:
            kwargs[name] = state
        out = model(ids, **kwargs)
        return _logits(out), _returned_cache(out)

    return Decoder(
        f"the model's KV cache (use_cache, {name})",
        lambda ids: _logits(model(ids, use_cache=False)),
        hf_step,
    )


def _param_dtype(model: Any) -> torch.dtype:
    params = getattr(model, "parameters", None)
    for p in params() if callable(params) else ():
        if p.is_floating_point():
            return p.dtype  # type: ignore[no-any-return]
    return torch.float32


def _at_step(logits: torch.Tensor, full: torch.Tensor, axis: int) -> torch.Tensor:
    """One step's logits as ``full`` without its position axis: ``[B, 1, V]`` or ``[B, V]``."""
    if logits.dim() == full.dim() and logits.shape[axis] >= 1:
        return logits.select(axis, logits.shape[axis] - 1)
    if logits.dim() == full.dim() - 1:
        return logits
    raise TypeError(
        f"a decoding step returned logits of shape {tuple(logits.shape)}; the full forward's are "
        f"{tuple(full.shape)} (want them with one position, or without the position axis)"
    )


@dataclass
class _Parted:
    first: int | None  # the first position that differs
    sample: int | None  # the sample that differs most there
    max_abs: float
    max_abs_first: float
    cosine: float  # the worst (sample, position)
    cosine_first: float
    finite: bool
    per_position: list[float]


def _finite_or_str(x: float) -> float | str:
    return x if math.isfinite(x) else str(x)


def _part(
    dec: torch.Tensor, full: torch.Tensor, axis: int, dtype: torch.dtype, min_cos: float
) -> _Parted:
    """Position by position: close as ``torch.testing.assert_close`` at ``dtype``'s tolerance
    (|a - e| <= atol + rtol·|e|, NaN never close), and cosine over the rest >= ``min_cos``."""
    rtol, atol = tolerances(dtype)
    b, t = full.shape[0], full.shape[axis]
    a = dec.detach().to(torch.float64).movedim(axis, 1).reshape(b, t, -1)
    e = full.detach().to(torch.float64).movedim(axis, 1).reshape(b, t, -1)
    diff = torch.nan_to_num((a - e).abs(), nan=math.inf)
    close = (diff <= atol + rtol * e.abs()).all(dim=2)  # [B, T]
    an, en = a.norm(dim=2), e.norm(dim=2)
    cos = (a * e).sum(dim=2) / (an * en).clamp_min(1e-300)
    cos = torch.where((an == 0) & (en == 0), torch.ones_like(cos), cos)
    cos = torch.nan_to_num(cos, nan=-1.0)
    bad = (~close) | (cos < min_cos)  # [B, T]
    per_pos = diff.amax(dim=(0, 2))  # [T]
    bad_pos = bad.any(dim=0).nonzero()
    first = int(bad_pos[0]) if bad_pos.numel() else None
    sample = int(torch.argmax(diff[:, first].amax(dim=1))) if first is not None else None
    return _Parted(
        first=first,
        sample=sample,
        max_abs=float(per_pos.max()),
        max_abs_first=float(per_pos[first]) if first is not None else 0.0,
        cosine=float(cos.min()),
        cosine_first=float(cos[:, first].min()) if first is not None else 1.0,
        finite=bool(torch.isfinite(a).all()),
        per_position=[float(x) for x in per_pos[:_MAX_PER_POSITION]],
    )


def kv_cache_item(
    model: Any,
    spec: Spec,
    settings: dict[str, Any],
    *,
    level: str,
    name: str,
    required: bool = True,
) -> CheckItem:
    """Decode the batch's first ``kv_length`` tokens one at a time and compare every position's
    logits with one full forward's. Skipped (``passed`` None) when the model cannot be driven."""
    n = int(settings.get("batch_size", min(spec.batch_size, 4)))
    min_cos = float(settings.get("cosine", 0.999))
    axis = spec.sequence_axis if spec.sequence_axis is not None else 1

    def item(passed: bool | None, figure: str, **detail: Any) -> CheckItem:
        return CheckItem(
            level=level, name=name, passed=passed, required=required, figure=figure, detail=detail
        )

    how = decoder_for(model, spec)
    if isinstance(how, str):
        return item(None, f"skipped: {how}", reason=how)
    try:
        ids = as_tuple(spec.batch(n)[0])[0]
        if not isinstance(ids, torch.Tensor) or ids.dim() <= axis or ids.shape[axis] < 1:
            shape = tuple(ids.shape) if isinstance(ids, torch.Tensor) else type(ids).__name__
            why = f"the batch's first input ({shape}) has no sequence axis {axis} to decode along"
            return item(None, f"skipped: {why}", reason=why)
        length = min(int(settings.get("kv_length", ids.shape[axis])), ids.shape[axis])
        ids = ids.narrow(axis, 0, length)
        with torch.no_grad():
            full = how.full(ids)
            if full.dim() <= axis or full.shape[axis] != length:
                raise TypeError(
                    f"the full forward's logits {tuple(full.shape)} have no {length} positions "
                    f"on axis {axis}"
                )
            state: Any = None
            steps = []
            for t in range(length):
                logits, state = how.step(state, ids.narrow(axis, t, 1))
                steps.append(_at_step(logits, full, axis).to(full.dtype))
        dec = torch.stack(steps, dim=axis)
        if dec.shape != full.shape:
            raise TypeError(f"decoded logits {tuple(dec.shape)} != full {tuple(full.shape)}")
    except Exception as e:
        err = traceback.format_exception_only(type(e), e)[-1].strip()[:300]
        return item(False, f"decoding with {how.how} raised {err}", error=err, how=how.how)
    dtype = _param_dtype(model)
    p = _part(dec, full, axis, dtype, min_cos)
    ok = p.first is None and p.finite
    head = f"{length} positions × {ids.shape[0]} samples decoded with {how.how}"
    if ok:
        figure = f"{head}: cosine {p.cosine:.6f} (goal >= {min_cos}), max |diff| {fmt(p.max_abs)}"
    elif p.first is not None:
        figure = (
            f"{head}: first differs at position {p.first} (sample {p.sample}): max |diff| "
            f"{fmt(p.max_abs_first)}, cosine {p.cosine_first:.6f} (goal >= {min_cos}); "
            f"max |diff| over all positions {fmt(p.max_abs)}"
        )
    else:
        figure = f"{head}: non-finite logits"
    rtol, atol = tolerances(dtype)
    return item(
        ok,
        figure,
        how=how.how,
        positions=length,
        samples=int(ids.shape[0]),
        first_position=p.first,
        first_position_sample=p.sample,
        max_abs=_finite_or_str(p.max_abs),
        max_abs_at_first=_finite_or_str(p.max_abs_first),
        cosine=_finite_or_str(p.cosine),
        finite=p.finite,
        dtype=str(dtype).removeprefix("torch."),
        rtol=rtol,
        atol=atol,
        per_position_max_abs=[_finite_or_str(x) for x in p.per_position],
    )
