"""ledger: auditable, replayable ML training runs."""

from __future__ import annotations

from ._version import __version__
from .errors import (
    AmbiguousIdError,
    CorruptObjectError,
    FormatVersionError,
    IntegrityError,
    LedgerAccessError,
    LedgerError,
    LedgerNotFoundError,
    MissingObjectError,
    ReplayError,
    UnknownIdError,
    UsageError,
)
from .run.start import start
from .runtime import Run, current_run, log, resume_from, save_rng_state, seed
from .store import Store

__all__ = [
    "AmbiguousIdError",
    "CorruptObjectError",
    "FormatVersionError",
    "IntegrityError",
    "LedgerAccessError",
    "LedgerError",
    "LedgerNotFoundError",
    "MissingObjectError",
    "ReplayError",
    "Run",
    "Store",
    "UnknownIdError",
    "UsageError",
    "__version__",
    "current_run",
    "log",
    "resume_from",
    "save_rng_state",
    "seed",
    "start",
]
