"""Importing, while the recorded command runs, what is needed only once it has exited.

Sealing a run (runtime captures, sweeps, the index) and, for a replay, comparing and judging it
import modules the launch does not need: imported after the exit, they add to every run's
overhead; imported before the launch, they delay it. ``warm_imports`` imports them in a thread
started at the launch, so the time overlaps the command; the caller joins it before it goes on
(``join``). A module that fails here is imported again, error and all, where it is used.

Importing from two threads at once is safe (each module has its own import lock); what is
warmed (the seal's modules) never imports the capture and CLI modules the main thread imports
meanwhile, so the two cannot wait on each other in a cycle. (The records written before the
launch need no models: they are built as JSON, ledger/records/plain.py.)
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence

__all__ = ["SEAL_MODULES", "warm_imports"]

# What ``record.finish`` imports for every run (tests/record/test_record_warm.py checks the list
# against a real run, so that it does not go stale).
SEAL_MODULES = (
    "ledger.runtime.ingest",
    "ledger.run.sweeps",
    "ledger.run.reads",
    "ledger.index",
)


def warm_imports(modules: Sequence[str]) -> threading.Thread:
    """Start a daemon thread that imports ``modules`` in order (``module:Model`` also builds
    that pydantic model, whose build is deferred to its first use); errors are left to the
    later import."""

    def run() -> None:
        for entry in modules:
            name, _, model = entry.partition(":")
            try:
                module = importlib.import_module(name)
                if model:
                    getattr(module, model).model_rebuild()
            except Exception:  # imported again where it is used, error and all
                continue

    thread = threading.Thread(target=run, name="ledger-warm-imports", daemon=True)
    thread.start()
    return thread
