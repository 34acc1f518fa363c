"""Small real models for the ladder and gate tests, and models that must fail each check.

Every ``*_spec`` function is a spec entry point (``gate_models:mlp_spec``)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ledger.check import Spec


def _vectors(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1000 + n)
    return torch.randn(n, 8, generator=g), torch.randint(0, 3, (n,), generator=g)


def _adam(params: Any) -> torch.optim.Optimizer:
    return torch.optim.Adam(params, lr=1e-2)


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Poison inputs are handled, not propagated: NaN/Inf become finite, extremes are bounded.
        return self.net(torch.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0).clamp(-50, 50))


def mlp_spec() -> Spec:
    return Spec(
        model=MLP,
        batch=_vectors,
        loss=nn.functional.cross_entropy,
        optimizer=_adam,
        scheduler=lambda o: torch.optim.lr_scheduler.StepLR(o, 2, 0.5),
    )


class UnusedHead(MLP):
    """A second head the forward never uses: its parameters never get a gradient."""

    def __init__(self) -> None:
        super().__init__()
        self.aux_head = nn.Linear(32, 5)


def unused_head_spec() -> Spec:
    return Spec(model=UnusedHead, batch=_vectors, loss=nn.functional.cross_entropy, optimizer=_adam)


def frozen_spec() -> Spec:
    """Every parameter frozen by mistake: nothing can train."""

    def model() -> nn.Module:
        m = MLP()
        for p in m.parameters():
            p.requires_grad_(False)
        return m

    return Spec(
        model=model,
        batch=_vectors,
        loss=nn.functional.cross_entropy,
        optimizer=lambda p: torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.1),
    )


def no_learning_spec() -> Spec:
    """An LR of zero: one step works, but the tiny batch is never overfit."""
    return Spec(
        model=MLP,
        batch=_vectors,
        loss=nn.functional.cross_entropy,
        optimizer=lambda p: torch.optim.SGD(p, lr=0.0),
    )


def exploding_spec() -> Spec:
    """A far too high LR: the update ratio blows past any sane bound at once."""
    return Spec(
        model=MLP,
        batch=_vectors,
        loss=nn.functional.cross_entropy,
        optimizer=lambda p: torch.optim.SGD(p, lr=1e4),
    )


class HiddenMomentum(torch.optim.SGD):
    """Momentum kept outside ``state_dict()``: a restart silently loses it."""

    def __init__(self, params: Any) -> None:
        super().__init__(params, lr=0.05)
        self.hidden: dict[int, torch.Tensor] = {}

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:  # type: ignore[override]
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                buf = self.hidden.setdefault(id(p), torch.zeros_like(p))
                buf.mul_(0.9).add_(p.grad)
                p.add_(buf, alpha=-group["lr"])


def hidden_state_spec() -> Spec:
    return Spec(
        model=MLP, batch=_vectors, loss=nn.functional.cross_entropy, optimizer=HiddenMomentum
    )


class Fp16Overflow(nn.Module):
    """Squares activations scaled past fp16's range (65504): inf, then NaN, in half precision."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x) * 300.0
        return (h * h) / (h * h).sum(dim=1, keepdim=True)


def fp16_overflow_spec() -> Spec:
    return Spec(
        model=Fp16Overflow, batch=_vectors, loss=nn.functional.cross_entropy, optimizer=_adam
    )


class NoOnnx(nn.Module):
    """Eigenvalues: torch exports the graph, but no ONNX function exists for linalg_eig."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x).reshape(-1, 2, 2)
        return torch.linalg.eigvals(h).real.reshape(x.shape[0], -1)


def no_onnx_spec() -> Spec:
    return Spec(model=NoOnnx, batch=_vectors, loss=nn.functional.cross_entropy, optimizer=_adam)


class BatchStats(MLP):
    """Normalises by the batch's own statistics: a sample's answer depends on its batch-mates."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x - x.mean(dim=0, keepdim=True))


def batch_stats_spec() -> Spec:
    return Spec(model=BatchStats, batch=_vectors, loss=nn.functional.cross_entropy, optimizer=_adam)


class Leaky(MLP):
    """Keeps a 1 MiB buffer from every call: memory grows without bound."""

    def __init__(self) -> None:
        super().__init__()
        self.history: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.history.append(torch.ones(1 << 18))
        return super().forward(x)


def leaky_spec() -> Spec:
    return Spec(model=Leaky, batch=_vectors, loss=nn.functional.cross_entropy, optimizer=_adam)


class Plain(nn.Module):
    """No input guard: NaN in, NaN out, silently."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] == 0:
            raise RuntimeError("")  # an internal failure with no message
        return self.net(x)


def plain_spec() -> Spec:
    return Spec(model=Plain, batch=_vectors, loss=nn.functional.cross_entropy, optimizer=_adam)


class CharLM(nn.Module):
    """A character language model (embedding, GRU, head) with a position limit."""

    max_length = 32

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(40, 16)
        self.gru = nn.GRU(16, 32, batch_first=True)
        self.head = nn.Linear(32, 40)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        if ids.dim() != 2:
            raise ValueError(f"ids must be [batch, length], got {tuple(ids.shape)}")
        if ids.shape[1] > self.max_length:
            raise ValueError(f"sequence of {ids.shape[1]} exceeds the limit {self.max_length}")
        if ids.numel() and (ids.min() < 0 or ids.max() >= 40):
            raise ValueError("token ids must lie in [0, 40)")
        out, _ = self.gru(self.emb(ids))
        return self.head(out)


def _chars(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(2000 + n)
    ids = torch.randint(0, 40, (n, 17), generator=g)
    return ids[:, :-1], ids[:, 1:]


def char_lm_spec() -> Spec:
    return Spec(
        model=CharLM,
        batch=_chars,
        loss=lambda out, y: nn.functional.cross_entropy(out.reshape(-1, 40), y.reshape(-1)),
        optimizer=lambda p: torch.optim.Adam(p, lr=3e-2),
        tokens_per_sample=16,
        sequence_axis=1,
        max_length=32,
    )


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.head = nn.Linear(4 * 8 * 8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.conv(x)).flatten(1))


def _images(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3000 + n)
    return torch.randn(n, 1, 8, 8, generator=g), torch.randint(0, 3, (n,), generator=g)


def conv_spec() -> Spec:
    return Spec(model=ConvNet, batch=_images, loss=nn.functional.cross_entropy, optimizer=_adam)
