"""``ledger.open(path)``: a read-only view of a ledger, as tables and run objects."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import LedgerNotFoundError, UsageError
from ..store import Store
from ..store.repo import DIRNAME

if TYPE_CHECKING:
    import pandas as pd

    from .one_run import RunView

__all__ = ["Ledger", "open"]


def open(path: str | os.PathLike[str] = ".") -> Ledger:
    """The ledger at ``path``: a ledger folder itself, or the nearest ``.ledger`` at or above
    ``path`` (a project folder), as the commands find it from there."""
    start = Path(path).expanduser().absolute()
    if (start / "config.json").is_file():
        return Ledger(Store.open(start))
    for d in [start, *start.parents]:
        if os.path.lexists(d / DIRNAME / "config.json"):
            return Ledger(Store.open(d / DIRNAME))
    raise LedgerNotFoundError(
        f"no {DIRNAME} ledger at {start} or above it",
        hint="give ledger.open() the project folder or its .ledger folder",
    )


def _listify(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _tags(tags: Mapping[str, str] | Sequence[str] | None) -> dict[str, str] | None:
    if tags is None:
        return None
    if isinstance(tags, Mapping):
        return {str(k): str(v) for k, v in tags.items()}
    out = {}
    for t in _listify(tags):
        key, sep, value = t.partition("=")
        if not sep or not key:
            raise UsageError(f"tag {t!r} is not KEY=VALUE", hint="e.g. tags={'dataset': 'c10'}")
        out[key] = value
    return out


class Ledger:
    """A ledger, read-only. ``runs()`` and ``metrics()`` need pandas (the ``table`` extra)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.warnings: list[str] = []  # what the last call found the index disagreeing on

    def __repr__(self) -> str:
        return f"<ledger {self.store.root}>"

    # -- tables ----------------------------------------------------------------------------------
    def run_rows(
        self,
        where: str | Sequence[str] | None = None,
        name: str | None = None,
        tags: Mapping[str, str] | Sequence[str] | None = None,
        status: str | None = None,
        *,
        replays: bool = False,
        retracted: bool = False,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """``runs()`` as a list of dicts (no pandas needed)."""
        from .tables import run_rows

        self.warnings = []
        return run_rows(
            self.store,
            where=_listify(where),
            name=name,
            tags=_tags(tags),
            status=status,
            replays=replays,
            retracted=retracted,
            limit=limit,
            warnings=self.warnings,
        )

    def runs(
        self,
        where: str | Sequence[str] | None = None,
        name: str | None = None,
        tags: Mapping[str, str] | Sequence[str] | None = None,
        status: str | None = None,
        *,
        replays: bool = False,
        retracted: bool = False,
        limit: int | None = None,
    ) -> pd.DataFrame:
        """Original runs, newest first, one row each: ``id``, ``short_id``, ``name``,
        ``status``, ``exit_code``, ``started``, ``ended`` (UTC timestamps), ``wall_seconds``,
        ``replay_of``, ``replays``, ``contract``, ``tags`` (a dict), ``retracted``,
        ``retraction_reason``, ``verdict`` (the newest) and ``verdicts``; then
        ``params.<key>`` and ``metrics.<name>.last`` / ``.best`` for every run's keys.
        ``where``: filters as ``ledger ls --where`` (``"params.lr > 0.01"``), all must hold;
        ``tags``: ``{"k": "v"}`` or ``["k=v"]``; ``replays``: also each original's replays;
        ``retracted``: also retracted runs."""
        from .frames import require_pandas
        from .tables import runs_frame

        pd = require_pandas()
        rows = self.run_rows(
            where,
            name,
            tags,
            status,
            replays=replays,
            retracted=retracted,
            limit=limit,
        )
        return runs_frame(pd, rows)

    def metric_rows(
        self,
        runs: Any = None,
        names: str | Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        """``metrics()`` as a list of dicts (no pandas needed)."""
        from .tables import metric_rows

        return metric_rows(self.store, self._run_ids(runs), _listify(names) or None)

    def metrics(
        self,
        runs: Any = None,
        names: str | Sequence[str] | None = None,
    ) -> pd.DataFrame:
        """Metric series as a long table: ``run``, ``metric``, ``step``, ``value``, ``time``
        (seconds since the run started), ``rank`` (<NA>: the whole run), ``source``
        (``api``, ``stdout``, ``tensorboard``, ``combined``) and ``samples``. ``runs``: ids,
        prefixes, short ids or names, a ``runs()`` DataFrame, or None for every run
        ``runs()`` lists; ``names``: only these metrics."""
        from .frames import require_pandas
        from .tables import metrics_frame

        pd = require_pandas()
        return metrics_frame(pd, self.metric_rows(runs, names))

    def _run_ids(self, runs: Any) -> list[str]:
        from ..run.find import resolve_run

        if runs is None:
            return [r["id"] for r in self.run_rows()]
        if hasattr(runs, "columns") and "id" in getattr(runs, "columns", ()):
            return [str(i) for i in runs["id"]]
        texts = [runs] if isinstance(runs, str) else [str(r) for r in runs]
        return list(dict.fromkeys(resolve_run(self.store, str(t)) for t in texts))

    # -- one run ---------------------------------------------------------------------------------
    def run(self, id: str) -> RunView:
        """One run by id, unique prefix, short id or name, with its config, inputs, outputs,
        checkpoints, replays and verdicts."""
        from .one_run import run_view

        return run_view(self, id)
