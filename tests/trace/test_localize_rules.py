"""The localization rules on small real trainings: each phase of a step, what is said beside
the culprit, and what is not a culprit."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from torch import nn  # noqa: E402

from ledger.replay.localize import localize  # noqa: E402
from ledger.runtime.run import Run  # noqa: E402
from ledger.torch import trace  # noqa: E402

Traces = dict[int, dict[str, Any]]


class Noise(torch.autograd.Function):
    """Identity forward; the backward adds ``scale`` to the gradient."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, scale: float) -> torch.Tensor:
        ctx.scale = scale
        return x.clone()

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[torch.Tensor, None]:
        return g + ctx.scale, None


class Net(nn.Module):
    def __init__(self, outside: float = 0.0, grad_noise: float = 0.0, branch: bool = False):
        super().__init__()
        self.inp = nn.Linear(4, 8)
        self.drop = nn.Dropout(0.5)
        self.out = nn.Linear(8, 1)
        self.extra = nn.Tanh()
        self.outside, self.grad_noise, self.branch = outside, grad_noise, branch

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x) + self.outside  # functional code between submodules
        h = Noise.apply(h, self.grad_noise)
        if self.branch:
            h = self.extra(h)
        return self.out(self.drop(h))


def _train(
    values: int = 64,
    before: Callable[[], None] = lambda: None,
    loss_fn: Callable[..., Any] = nn.functional.mse_loss,
    **net: Any,
) -> Traces:
    torch.manual_seed(0)
    model = Net(**net)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(1)
    before()
    tr = trace(model, opt, every=1, values=values, run=Run())
    for _ in range(3):
        x, y = torch.randn(5, 4, generator=g), torch.randn(5, 1, generator=g)
        loss = loss_fn(model(x), y)
        tr.loss(loss)
        loss.backward()
        opt.step()
        opt.zero_grad()
    tr.close()
    header, *steps = tr.records
    return {0: {"header": header["header"], "steps": steps}}


def _where(loc: dict[str, Any]) -> tuple[Any, ...]:
    return (loc["step"], loc["phase"], loc["module"], loc["cause"])


def test_an_unused_generator_that_differs_is_no_culprit() -> None:
    loc = localize(_train(), _train(before=lambda: random.seed(12345)))
    assert loc["found"] is False
    assert "RNG states differ (python) but nothing traced drew a difference" in loc["line"]


def test_a_dropout_drawing_from_another_torch_state_is_put_down_to_the_random_state() -> None:
    loc = localize(_train(), _train(before=lambda: torch.manual_seed(99)))
    assert _where(loc) == (0, "forward", "drop", "random-state")
    assert "forward of drop (Dropout) differs (inputs identical" in loc["line"]
    assert "RNG state differs at the start of the step (torch)" in loc["line"]


def test_code_between_submodules_names_the_parent() -> None:
    loc = localize(_train(), _train(outside=1e-3))
    assert _where(loc) == (0, "forward", "<model>", "outside-modules")
    assert "input of drop (Dropout) differs while every module before it matched" in loc["line"]


def test_a_backward_that_differs_names_the_parameter_and_its_module() -> None:
    loc = localize(_train(), _train(grad_noise=1e-6))
    assert _where(loc) == (0, "backward", "inp", "nondeterministic-op")
    assert loc["parameter"] == "inp.bias"  # the first of inp's gradients backward accumulates
    assert "gradient of inp.bias differs in the backward of inp (Linear)" in loc["line"]


def test_a_changed_loss_is_the_loss_phase() -> None:
    loc = localize(_train(), _train(loss_fn=nn.functional.l1_loss))
    assert _where(loc) == (0, "loss", None, "loss")


def test_other_control_flow_is_execution_order() -> None:
    loc = localize(_train(), _train(branch=True))
    assert _where(loc) == (0, "forward", None, "execution-order")
    assert loc["modules"] == ["drop", "extra"]
    assert "forward ran drop in the original, extra here" in loc["line"]


def test_the_differing_values_are_counted_where_kept_and_said_unknown_where_not() -> None:
    loss = localize(_train(), _train(loss_fn=nn.functional.l1_loss))  # a 0-d tensor
    assert "loss differs (max |Δ| " in loss["line"] and ", 1 of 1 values)" in loss["line"]
    loc = localize(_train(), _train(grad_noise=1e-6))
    assert "(max |Δ| 5.1e-06, 8 of 8 values)" in loc["line"]  # 5 samples, 1e-6 each
    blind = localize(_train(values=0), _train(values=0, grad_noise=1e-6))
    assert "max |Δ| not known: values not kept (trace(values=N) keeps them)" in blind["line"]


def test_traces_from_different_devices_are_not_compared() -> None:
    a, b = _train(), _train()
    b[0]["header"] = {**b[0]["header"], "device": "cuda"}
    loc = localize(a, b)
    assert loc["found"] is False and loc["comparable"] is False
    assert "the original ran on cpu, the other run on cuda" in loc["line"]
