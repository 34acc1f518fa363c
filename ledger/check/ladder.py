"""Run the ladder's levels in order and store the result as a ``check`` record."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..errors import UsageError
from ..records.check import Check, CheckItem
from ..store import Store

__all__ = ["DEFAULT_LEVELS", "LEVEL_NAMES", "CheckResult", "run_ladder", "store_check"]

LEVEL_NAMES = (
    "static",
    "shapes",
    "one-step",
    "overfit",
    "stability",
    "distributed",
    "checkpoint",
    "performance",
    "inference",
)
# Distributed is opt-in: it starts torchrun with 2 processes.
DEFAULT_LEVELS = tuple(n for n in LEVEL_NAMES if n != "distributed")


@dataclass
class CheckResult:
    record: Check
    oid: str | None = None
    raw: bytes | None = None  # the YAML spec's bytes, stored with the record

    @property
    def exit_code(self) -> int:
        return 0 if self.record.passed else 1


def _passed(items: list[CheckItem]) -> bool:
    return all(i.passed is not False for i in items if i.required)


def environment() -> dict[str, Any]:
    import platform

    import torch

    return {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
        "machine": platform.machine(),
    }


def run_ladder(
    source: str,
    levels: list[str] | None = None,
    *,
    keep_going: bool = False,
    run_id: str | None = None,
    on_item: Callable[[CheckItem], None] | None = None,
    store: Store | None = None,
) -> CheckResult:
    """Run ``levels`` (default: all but distributed) of spec ``source`` in ladder order; stop
    after the first level with a failing required check unless ``keep_going``."""
    from .._version import __version__
    from ..records.check import Check
    from .spec import load_spec

    wanted = list(levels or DEFAULT_LEVELS)
    unknown = [n for n in wanted if n not in LEVEL_NAMES]
    if unknown:
        raise UsageError(
            f"unknown level(s) {', '.join(unknown)}", hint=f"levels: {', '.join(LEVEL_NAMES)}"
        )
    order = [n for n in LEVEL_NAMES if n in wanted]
    loaded = load_spec(source)
    from .levels import LEVELS  # torch: only once the levels and the spec are known good

    items: list[CheckItem] = []
    stopped: str | None = None
    for name in order:
        settings = dict(loaded.settings.get(name, {}))
        settings["_source"] = source
        settings["_store"] = store
        settings["_run_id"] = run_id
        got = LEVELS[name](loaded.spec, settings)
        for item in got:
            items.append(item)
            if on_item is not None:
                on_item(item)
        if not _passed(got) and not keep_going:
            stopped = name
            break
    return CheckResult(
        Check(
            check_id=f"chk-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}",
            created=datetime.now(UTC),
            spec=source,
            spec_digest=None,
            run_id=run_id or os.environ.get("LEDGER_RUN_ID") or None,
            levels=order,
            stopped_at=stopped,
            items=items,
            passed=_passed(items) and stopped is None,
            environment=environment(),
            ledger_version=__version__,
        ),
        raw=loaded.raw,
    )


def store_check(store: Store, result: CheckResult) -> CheckResult:
    """Objects first (the YAML spec's bytes), then the record, then ``checks/<id>``."""
    rec = result.record
    if result.raw is not None:
        rec = rec.model_copy(update={"spec_digest": store.objects.put_bytes(result.raw)})
    oid = store.put_json(rec.to_json())
    store.set_ref(f"checks/{rec.check_id}", oid, op="check", passed=rec.passed)
    return CheckResult(rec, oid, result.raw)
