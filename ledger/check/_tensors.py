"""Tensor helpers shared by the ladder and the gate (imports torch)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["Compare", "as_tuple", "call", "compare", "flat", "fmt", "tolerances"]

# Tolerances for an output computed in ``dtype`` against the float32 reference. torch's own
# defaults (torch.testing) are per element for one op; a whole network accumulates more.
_TOL = {
    torch.float32: (1e-4, 1e-5),
    torch.bfloat16: (5e-2, 5e-2),
    torch.float16: (1e-2, 1e-2),
    torch.qint8: (1e-1, 1e-1),
}


def tolerances(dtype: torch.dtype) -> tuple[float, float]:
    return _TOL.get(dtype, (1e-1, 1e-1))


def as_tuple(inputs: Any) -> tuple[Any, ...]:
    return tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)


def call(model: Any, inputs: Any) -> Any:
    return model(*as_tuple(inputs))


def flat(out: Any) -> list[torch.Tensor]:
    """Every tensor in a model output (tensor, tuple/list, dict, HF-style object)."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        return [t for v in out.values() for t in flat(v)]
    if isinstance(out, (tuple, list)):
        return [t for v in out for t in flat(v)]
    return []


def fmt(x: float) -> str:
    if math.isnan(x) or math.isinf(x):
        return str(x)
    if x == 0 or 1e-3 <= abs(x) < 1e5:
        return f"{x:.4g}"
    return f"{x:.3e}"


@dataclass
class Compare:
    cosine: float  # the worst sample's cosine similarity (over every output)
    worst_sample: int | None
    max_abs: float
    close: bool  # torch.testing.assert_close with the dtype's tolerances
    message: str  # assert_close's message when not close, else ""
    finite: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "cosine": self.cosine if math.isfinite(self.cosine) else str(self.cosine),
            "worst_sample": self.worst_sample,
            "max_abs": self.max_abs if math.isfinite(self.max_abs) else str(self.max_abs),
            "close": self.close,
            "finite": self.finite,
            "message": self.message[:500],
        }


def _rows(t: torch.Tensor) -> torch.Tensor:
    t = t.detach().to(torch.float64)
    return t.reshape(t.shape[0], -1) if t.dim() >= 1 and t.shape[0] > 0 else t.reshape(1, -1)


def compare(actual: Any, expected: Any, dtype: torch.dtype = torch.float32) -> Compare:
    """Per-sample cosine similarity (rows of the first axis) and assert_close, output by output."""
    a_list, e_list = flat(actual), flat(expected)
    if len(a_list) != len(e_list):
        return Compare(math.nan, None, math.inf, False, "different number of outputs", False)
    worst, worst_i, max_abs, close, message, finite = 1.0, None, 0.0, True, "", True
    rtol, atol = tolerances(dtype)
    for a, e in zip(a_list, e_list, strict=True):
        if tuple(a.shape) != tuple(e.shape):
            msg = f"shape {tuple(a.shape)} != {tuple(e.shape)}"
            return Compare(math.nan, None, math.inf, False, msg, False)
        af, ef = _rows(a), _rows(e)
        finite = finite and bool(torch.isfinite(af).all())
        if af.numel() == 0:
            continue
        num = (af * ef).sum(dim=1)
        den = af.norm(dim=1) * ef.norm(dim=1)
        # Two zero rows agree; one zero row against a non-zero one does not.
        both_zero = (af.norm(dim=1) == 0) & (ef.norm(dim=1) == 0)
        cos = torch.where(both_zero, torch.ones_like(num), num / den.clamp_min(1e-300))
        cos = torch.nan_to_num(cos, nan=-1.0)
        i = int(torch.argmin(cos))
        if float(cos[i]) < worst:
            worst, worst_i = float(cos[i]), i
        diff = (af - ef).abs()
        max_abs = max(max_abs, float(torch.nan_to_num(diff, nan=math.inf).max()))
        try:
            torch.testing.assert_close(af, ef, rtol=rtol, atol=atol, equal_nan=False)
        except AssertionError as err:
            close, message = False, message or str(err).strip()
    if not finite:
        worst = min(worst, -1.0)
    return Compare(worst, worst_i, max_abs, close, message, finite)
