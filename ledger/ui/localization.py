"""Where two traced runs first diverged, as the web view's diff page draws it: the chain, what
to do, and the model's module tree with the first differing module and its parents marked.

None when either run has no trace (``ledger.torch.trace``); the rules are
``ledger.replay.localize``'s, the same as ``ledger diff`` prints.
"""

from __future__ import annotations

from typing import Any

from ..errors import LedgerError
from ..store import Store

__all__ = ["localization_view"]


def localization_view(store: Store, a: str, b: str) -> dict[str, Any] | None:
    from ..replay.localize import load_traces, localize
    from ..run.find import load_run

    try:
        ta, tb = (load_traces(store, load_run(store, text)[1]) for text in (a, b))
    except (LedgerError, ValueError, TypeError, KeyError) as e:
        return {"found": False, "line": f"the traces could not be read: {e}", "tree": []}
    if not ta or not tb:
        return None
    loc = localize(ta, tb)
    rank = loc.get("rank")
    trace = (ta.get(rank) if rank is not None else None) or ta[min(ta)]
    modules = (trace.get("header") or {}).get("modules") or []
    return {**loc, "tree": module_tree(modules, loc.get("module"))}


def module_tree(modules: list[Any], culprit: str | None) -> list[dict[str, Any]]:
    """One row per module in definition order: depth, name, class, and ``culprit`` or
    ``parent`` (a module holding the culprit) or ``""``."""
    rows = []
    for name, kind, *_ in modules:
        depth = 0 if name == "<model>" else name.count(".") + 1
        mark = ""
        if culprit is not None:
            if name == culprit:
                mark = "culprit"
            elif name == "<model>" or culprit.startswith(name + "."):
                mark = "parent"
        rows.append({"depth": depth, "name": name, "kind": kind, "mark": mark})
    return rows
