"""Imported runs (``ledger import mlflow``) are sealed records without a contract: this says
why one cannot be replayed."""

from __future__ import annotations

from ..errors import ReplayError
from ..records.run import Run

__all__ = ["not_replayable"]


def not_replayable(run: Run) -> ReplayError:
    """The error ``ledger replay`` raises for an imported run (exit 7)."""
    origin = run.imported
    where = (
        f"from {origin.source} ({origin.tracking_uri}, experiment {origin.experiment!r}, "
        f"run {origin.run_id})"
        if origin is not None
        else "without a contract"
    )
    return ReplayError(
        f"run {run.run_id} was imported {where}: ledger holds its params, metrics and "
        "artifacts, but not the code, environment and data to run it again; not replayable",
        hint="compare it with `ledger diff` or `ledger audit`; record the training again "
        "with `ledger record -- ...` to get a run that replays",
    )
