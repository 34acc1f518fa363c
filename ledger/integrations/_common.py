"""What both adapters share: the framework guard, rank variables and metric hand-off."""

from __future__ import annotations

import importlib
import json
import math
import os
from collections.abc import Mapping
from types import ModuleType
from typing import Any

__all__ = [
    "check_checkpoint_target",
    "hyperparams_note",
    "log_values",
    "record_seeds",
    "require",
    "set_rank_env",
    "start_trace",
]


def require(module: str, extra: str, what: str) -> ModuleType:
    """Import ``module`` or raise an ImportError that names the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(
            f"{what} needs {module!r}, which is not installed ({e}); "
            f"install it with: pip install 'ledger-repro[{extra}]'"
        ) from e


def set_rank_env(global_rank: int | None = None, world_size: int | None = None) -> None:
    """Give ledger's runtime the framework's rank when the launcher did not export ``RANK``.

    Lightning's own DDP launcher sets ``LOCAL_RANK``, ``NODE_RANK`` and ``WORLD_SIZE`` but not
    ``RANK``, so without this every process would write its seeds and RNG states as rank 0.
    With arguments (the framework's own global rank) it is authoritative. Without, ``RANK`` is
    left alone if set, else read from those variables on a single node (``NODE_RANK`` 0, where
    the global rank is the local one); call it before the first ``current_run()``.
    """
    if global_rank is None or world_size is None:
        if os.environ.get("RANK"):
            return
        local, world = os.environ.get("LOCAL_RANK"), os.environ.get("WORLD_SIZE")
        if not local or not world or os.environ.get("NODE_RANK", "0") not in ("", "0"):
            return
        try:
            global_rank, world_size = int(local), int(world)
        except ValueError:
            return
    if world_size > 1:
        os.environ["RANK"] = str(global_rank)


def check_checkpoint_target(store: Any, run_id: str | None, what: str) -> None:
    """Fail before training, not at the first checkpoint, when there is no ledger or no run to
    save checkpoints to (a script run outside ``ledger record`` and ``ledger.start``)."""
    from ..errors import UsageError
    from ..torch.checkpoint.common import open_store

    if not (run_id or os.environ.get("LEDGER_RUN_ID")):
        raise UsageError(
            f"{what} has no run to save checkpoints to",
            hint="run the script under `ledger record`, train inside `with ledger.start():`, "
            "pass run_id=..., or pass checkpoints=False",
        )
    open_store(store)  # a missing ledger is reported now, with its own hint


def record_seeds() -> None:
    """Write the seeds fixed so far into the current run. ``seed_everything`` may have run
    before ``ledger.start`` made the run, when there was no run to write them to."""
    from ..runtime import seeds

    current = seeds._current
    if current is not None:
        current.write()


def log_values(step: int | None, values: Mapping[str, Any]) -> None:
    """Hand metrics to the current run. Goes through the writer, not ``log(**values)``, so a
    metric called ``step``, ``samples`` or ``n`` stays a metric instead of an axis."""
    from ..runtime import current_run

    current_run()._writer.add(step, None, None, dict(values))


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return repr(value)


def hyperparams_note(source: str, params: Mapping[str, Any]) -> str:
    """A note for the run record holding ``params`` as canonical JSON (non-JSON values as repr)."""
    body = json.dumps(_jsonable(params), sort_keys=True, separators=(",", ":"))
    return f"{source} hyperparameters: {body}"


def start_trace(model: Any, optimizers: Any, every: int) -> Any:
    """``ledger.torch.trace`` of ``model`` every ``every`` steps, for an adapter. With one
    optimizer (unwrapped from a framework's wrapper) its step ends each traced step; with
    several or none, the next batch does."""
    from ..torch.tracing import Trace

    found = [getattr(o, "optimizer", o) for o in (optimizers or [])]
    return Trace(model, found[0] if len(found) == 1 else None, every=every)
