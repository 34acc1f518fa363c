"""``ledger.start``: a run created from inside Python, with the same contract as ``ledger record``.

For notebooks and scripts that are not launched through ``ledger record``. The code, inputs,
environment and config are frozen when the block starts; metrics, seeds and RNG states logged
inside it, and the declared outputs, are sealed when it ends — also when it raises.
Under ``ledger record`` there already is a run: ``start`` then yields it and seals nothing.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..runtime import Run, current_run, set_current_run

__all__ = ["start"]

_ENV = ("LEDGER_DIR", "LEDGER_RUN_ID", "LEDGER_RUN_DIR")


def _command() -> list[str]:
    argv = [a for a in sys.argv if a] or ["<interactive>"]
    return [sys.executable, *argv]


@contextmanager
def start(
    name: str | None = None,
    config: Mapping[str, Any] | None = None,
    *,
    inputs: Sequence[str | Path] = (),
    outputs: Sequence[str | Path] = (),
    tags: Mapping[str, str] | None = None,
    ledger_dir: str | Path | None = None,
) -> Iterator[Run]:
    """Create, run and seal a run around the ``with`` block; yields the in-process ``Run``.

    ``config`` (JSON-able) is stored as the run's config, exactly like a ``--config`` file.
    Output printed by the block is not captured (``ledger record`` captures it).
    """
    if os.environ.get("LEDGER_RUN_ID"):
        yield current_run()
        return
    from ..capture.boundary import for_store
    from ..capture.config import load_config_file
    from ..capture.stdout_metrics import StdoutMetrics
    from ..runtime import rank_info
    from ..store import Store
    from .execute import ExecResult
    from .options import RecordOptions
    from .record import begin, finish

    store = Store.open(ledger_dir)
    opts = RecordOptions(
        command=_command(),
        name=name,
        inputs=[Path(p) for p in inputs],
        outputs=[Path(p) for p in outputs],
        tags=dict(tags or {}),
        cwd=Path.cwd(),
    )
    b = begin(opts, store)
    if config is not None:
        path = b.staging / "start-config.json"
        try:
            # Redacted before it reaches the disk: the staging dir outlives a killed process.
            path.write_text(json.dumps(for_store("json", config), sort_keys=True, default=str))
        except (TypeError, ValueError) as e:
            from ..errors import UsageError

            raise UsageError(f"ledger.start(config=...) is not JSON-able: {e}") from None
        b.frozen.config_files.append(load_config_file(path, store))
    saved = {k: os.environ.get(k) for k in _ENV}
    os.environ.update(
        LEDGER_DIR=str(store.root), LEDGER_RUN_ID=b.run_id, LEDGER_RUN_DIR=str(b.staging)
    )
    run = Run(run_id=b.run_id, run_dir=b.staging, store_dir=store.root, rank=rank_info())
    previous = set_current_run(run)
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    returncode, interrupted = 0, None
    try:
        yield run
    except KeyboardInterrupt:
        returncode, interrupted = 130, 2
        raise
    except BaseException as e:
        returncode = e.code if isinstance(e, SystemExit) and isinstance(e.code, int) else 1
        raise
    finally:
        run.close()
        set_current_run(previous)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        usage = resource.getrusage(resource.RUSAGE_SELF)
        result = ExecResult(
            returncode=returncode,
            signal=None,
            interrupted_by=interrupted,
            wall_seconds=time.monotonic() - t0,
            cpu_user_seconds=usage.ru_utime - usage0.ru_utime,
            cpu_system_seconds=usage.ru_stime - usage0.ru_stime,
            peak_rss_bytes=int(usage.ru_maxrss) * 1024,
            started_monotonic=t0,
            notes=["created with ledger.start(): the process's output was not captured"],
        )
        finish(b, StdoutMetrics([]), result)
