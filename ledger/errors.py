"""Errors raised by ``ledger``, each written for the person who will read it.

Every error carries a one-line message (what was wrong), an optional hint (what to do next)
and the process exit code the CLI uses for it::

    LedgerError                         exit 1   base class; never raised directly
    ├── UsageError                      exit 2   bad input: options, files, ids, regexes
    │   ├── UnknownIdError              exit 2   no run/object matches an id or prefix
    │   └── AmbiguousIdError            exit 2   a prefix matches several ids
    ├── LedgerNotFoundError             exit 3   no ``.ledger`` here and none named
    ├── LedgerAccessError               exit 3   the ledger exists but cannot be written or read
    ├── FormatVersionError              exit 4   written by a newer ``ledger``; upgrade to read it
    ├── IntegrityError                  exit 5   stored data does not match its id or chain
    │   ├── CorruptObjectError          exit 5   an object's bytes do not hash to its id
    │   └── MissingObjectError          exit 5   a referenced object is absent
    └── ReplayError                     exit 7   a run could not be replayed (see replay docs)

Exit codes 0 (success), 1 (a check ran and failed: verify problems, not reproduced,
claim not supported) and 130 (interrupted) complete the table in ``docs/reference/exit-codes.md``.
"""

from __future__ import annotations

__all__ = [
    "AmbiguousIdError",
    "CorruptObjectError",
    "FormatVersionError",
    "IntegrityError",
    "LedgerAccessError",
    "LedgerError",
    "LedgerNotFoundError",
    "MalformedRecordError",
    "MissingObjectError",
    "ReplayError",
    "UnknownIdError",
    "UsageError",
]


class LedgerError(Exception):
    """Base class. ``message`` says what was wrong, ``hint`` what to do next."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message} ({self.hint})"
        return self.message


class UsageError(LedgerError):
    exit_code = 2


class UnknownIdError(UsageError):
    pass


class AmbiguousIdError(UsageError):
    def __init__(self, message: str, *, candidates: list[str], hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.candidates = candidates


class LedgerNotFoundError(LedgerError):
    exit_code = 3


class LedgerAccessError(LedgerError):
    exit_code = 3


class FormatVersionError(LedgerError):
    exit_code = 4


class IntegrityError(LedgerError):
    exit_code = 5


class MalformedRecordError(IntegrityError, ValueError):
    """A stored record whose fields do not fit its kind's model (damaged, or written by hand):
    ``where`` is the first field at fault (``name``, ``outputs.0.path``), ``reason`` what is
    wrong with it. A ValueError too, as pydantic's ValidationError was before it."""

    def __init__(
        self,
        kind: str,
        where: str,
        reason: str,
        *,
        what: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(
            f"{what or f'a stored {kind} record'} is malformed: {where}: {reason}",
            hint=hint
            or "the record was damaged or written by hand; `ledger verify` lists every such record",
        )
        self.kind, self.where, self.reason = kind, where, reason


class CorruptObjectError(IntegrityError):
    def __init__(self, oid: str, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.oid = oid


class MissingObjectError(IntegrityError):
    def __init__(self, oid: str, message: str | None = None, *, hint: str | None = None) -> None:
        super().__init__(message or f"object {oid} is missing from the store", hint=hint)
        self.oid = oid


class ReplayError(LedgerError):
    exit_code = 7
