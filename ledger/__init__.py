"""ledger: auditable, replayable ML training runs.

The names below load on first use (PEP 562): ``python -m ledger`` and the ``ledger`` program
import this package before every command, and ``ledger ls`` or ``ledger show`` need neither the
runtime nor the recorder (tests/cli/test_cli_fast_query.py checks what a command imports).
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

from ._version import __version__

if _typing.TYPE_CHECKING:
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
    from .read import open
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
    "open",
    "resume_from",
    "save_rng_state",
    "seed",
    "start",
]

# name -> the module that defines it
_LAZY = {
    **dict.fromkeys(
        [
            "AmbiguousIdError",
            "CorruptObjectError",
            "FormatVersionError",
            "IntegrityError",
            "LedgerAccessError",
            "LedgerError",
            "LedgerNotFoundError",
            "MissingObjectError",
            "ReplayError",
            "UnknownIdError",
            "UsageError",
        ],
        ".errors",
    ),
    "start": ".run.start",
    "open": ".read",
    **dict.fromkeys(
        ["Run", "current_run", "log", "resume_from", "save_rng_state", "seed"], ".runtime"
    ),
    "Store": ".store",
}


def __getattr__(name: str) -> _typing.Any:
    where = _LAZY.get(name)
    if where is None and not name.startswith("__"):
        # ``import ledger; ledger.runtime.current_run()`` worked while this package imported
        # its subpackages eagerly; it still does.
        try:
            return _importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(where, __name__), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
