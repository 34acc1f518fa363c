"""The trace a pass of ``ledger replay --localize`` takes of a program that never calls trace.

``ledger replay RUN --localize`` resumes the program from one of its own checkpoints
(``LEDGER_RESUME_FROM``) with ``LEDGER_LOCALIZE_STEPS=N`` set. When the program resumes
through ``ledger.torch.load_checkpoint(..., state=...)``, that call hands ledger the model
and the optimizer: the first ``nn.Module`` and the first optimizer among ``state``'s values
are traced on every step (``ledger.torch.trace(model, optimizer, every=1)``) and the pass
ends, exit status 0, after N steps: the cost of a pass is bounded by what the replay asked
for. Nothing is traced without the variable, and nothing is installed anywhere else.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from .tracing import Trace

__all__ = ["ENV", "VALUES", "start_if_asked"]

ENV = "LEDGER_LOCALIZE_STEPS"
VALUES = 4096  # values of tensors up to this size are kept, so the line gives max |Δ|


class _PassTrace(Trace):
    """A trace of every step that ends the process once ``limit`` steps were traced."""

    def __init__(self, model: Any, optimizer: Any, limit: int) -> None:
        super().__init__(model, optimizer, every=1, values=VALUES)
        self.limit = limit

    def _end(self) -> None:
        super()._end()
        if self.calls >= self.limit and not self.closed:
            for h in self._hooks:
                h.remove()
            self._hooks = []
            self.closed = True
            print(
                f"ledger: --localize pass: stopped after {self.limit} traced step(s)",
                file=sys.stderr,
                flush=True,
            )
            raise SystemExit(0)


def start_if_asked(state: dict[str, Any] | None) -> Trace | None:
    """Trace the model (and optimizer) in ``state`` when a localize pass asked for it."""
    text = os.environ.get(ENV)
    if not text or state is None:
        return None
    import torch

    limit = int(text)
    values = list(state.values())
    model = next((v for v in values if isinstance(v, torch.nn.Module)), None)
    optimizer = next((v for v in values if isinstance(v, torch.optim.Optimizer)), None)
    if model is None or limit < 1:
        print(
            "ledger: --localize pass: the resumed state holds no nn.Module; nothing traced",
            file=sys.stderr,
        )
        return None
    return _PassTrace(model, optimizer, limit)
