"""pandas, loaded when a table is asked for: the ``table`` extra, named when it is missing."""

from __future__ import annotations

from typing import Any

from ..errors import UsageError

__all__ = ["EXTRA_HINT", "require_pandas", "require_pyarrow"]

EXTRA_HINT = "pip install 'ledger-repro[table]'"


def require_pandas() -> Any:
    """The pandas module, or UsageError saying how to install it."""
    try:
        import pandas
    except ImportError as e:
        raise UsageError(
            f"reading runs as tables needs pandas, which is not installed ({e})",
            hint=f"{EXTRA_HINT} installs pandas and pyarrow (the `table` extra)",
        ) from None
    return pandas


def require_pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError as e:
        raise UsageError(
            f"writing Parquet needs pyarrow, which is not installed ({e})",
            hint=f"{EXTRA_HINT} installs pandas and pyarrow (the `table` extra)",
        ) from None
    return pyarrow
