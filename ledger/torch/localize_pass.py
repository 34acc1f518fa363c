"""The trace a pass of ``ledger replay --localize`` takes of a program that never calls trace.

``ledger replay RUN --localize`` resumes the program from one of its own checkpoints
(``LEDGER_RESUME_FROM``) with ``LEDGER_LOCALIZE_STEPS=N`` set. When the program resumes
through ``ledger.torch.load_checkpoint(..., state=...)``, that call hands ledger the model
and the optimizer: the first ``nn.Module`` and the first optimizer among ``state``'s values
are traced on every step (``ledger.torch.trace(model, optimizer, every=1)``) and the pass
ends, exit status 0, after N steps: the cost of a pass is bounded by what the replay asked
for. Nothing is traced without the variable, and nothing is installed anywhere else.

With ``LEDGER_LOCALIZE_DETERMINISTIC=1`` too (the third pass, run when two passes differ in
an operation on identical inputs), ``torch.use_deterministic_algorithms(True)`` is turned on
as the state is restored, and an exception that ends the program is preceded on stderr by a
line saying where it was raised (the pass's step, the innermost module whose forward was
running): torch's own error then names the operation, and the replay reads both back from
the pass's stderr (``ledger.replay.localize_determinism``).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from .tracing import Trace

__all__ = ["DETERMINISTIC_ENV", "ENV", "MARK", "VALUES", "start_if_asked"]

ENV = "LEDGER_LOCALIZE_STEPS"
DETERMINISTIC_ENV = "LEDGER_LOCALIZE_DETERMINISTIC"
MARK = "ledger: --localize deterministic pass: raised at"
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
    trace = _PassTrace(model, optimizer, limit)
    if os.environ.get(DETERMINISTIC_ENV) == "1":
        torch.use_deterministic_algorithms(True)
        _say_where_it_raised(trace)
    return trace


def _say_where_it_raised(trace: _PassTrace) -> None:
    """Chain sys.excepthook: name the step and module before the traceback is printed."""
    previous = sys.excepthook

    def hook(kind: Any, value: Any, tb: Any) -> None:
        try:
            running = trace.running()
            where = (
                f"the forward of {running[0]} ({running[1]})"
                if running is not None
                else "no module's forward (the backward pass, the loss or the optimizer)"
            )
            print(f"{MARK} pass step {trace.calls - 1}, in {where}", file=sys.stderr, flush=True)
        finally:
            previous(kind, value, tb)

    sys.excepthook = hook
