"""Reading a ledger from Python: ``ledger.open(path)`` and its tables.

``open(".")`` finds the ledger as every command does; ``.runs()`` and ``.metrics()`` answer
as pandas DataFrames (the ``table`` extra: ``pip install 'ledger-repro[table]'``), ``.run(id)``
as plain Python. Everything is read as ``ledger ls`` reads it: the index picks the runs, and
each value comes from the hashed records (``ledger.run.find.list_runs``). Nothing is written.
"""

from __future__ import annotations

from .api import Ledger, open
from .one_run import RunView

__all__ = ["Ledger", "RunView", "open"]
