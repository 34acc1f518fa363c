"""Each cause of divergence, injected into a real (small) transformer's training, is localized
to the step, phase and module it came from; the same training twice has no culprit."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

sys.path.insert(0, str(Path(__file__).parent))

import train_lm  # noqa: E402

from ledger.replay.localize import localize  # noqa: E402
from ledger.runtime.run import Run  # noqa: E402


def _trace(**opts: str) -> dict[int, dict[str, Any]]:
    tr = train_lm.train(opts, run=Run())
    header, *steps = tr.records
    return {0: {"header": header["header"], "steps": steps}}


@pytest.fixture(scope="module")
def original() -> dict[int, dict[str, Any]]:
    return _trace()


def test_the_same_training_twice_names_no_culprit(original: dict[int, Any]) -> None:
    loc = localize(original, _trace())
    assert loc["found"] is False and loc["comparable"] is True
    assert loc["compared_steps"] == 4
    assert "no divergence" in loc["line"]


CASES = [
    # (injected cause, step, phase, module, cause, words in the line)
    ({"T_THREADS": "1"}, 0, "forward", "norm", "thread-count", "thread count changed (2 vs 1)"),
    (
        {"T_UNSEEDED": "1"},
        0,
        "forward",
        "blocks.1.drop",
        "nondeterministic-op",
        "(UnseededDropout)",
    ),
    ({"T_NOGEN": "1"}, 0, "data", None, "data-order", "sample ids"),
    ({"T_LR_STEP": "2"}, 2, "optimizer", None, "lr-schedule", "lr 0.001 vs 0.0005"),
    ({"T_EPS": "1e-6"}, 0, "optimizer", None, "optimizer-settings", "eps 1e-08 vs 1e-06"),
    ({"T_NONDET": "1"}, 0, "forward", "blocks.0.mix", "nondeterministic-op", "every submodule"),
    ({"T_DRIFT": "1"}, 0, "forward", "blocks.0.mlp.1", "library-version", "(GELU) differs"),
]


@pytest.mark.parametrize(("opts", "step", "phase", "module", "cause", "words"), CASES)
def test_an_injected_cause_is_named(
    original: dict[int, Any],
    opts: dict[str, str],
    step: int,
    phase: str,
    module: str | None,
    cause: str,
    words: str,
) -> None:
    loc = localize(original, _trace(**opts))
    assert loc["found"] is True, loc
    assert (loc["step"], loc["phase"], loc["module"], loc["cause"]) == (
        step,
        phase,
        module,
        cause,
    ), loc["line"]
    assert words in loc["line"]
    assert loc["doc"].startswith("docs/how-to/localize-divergence.md#")
