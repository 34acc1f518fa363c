"""Run the gate on a checkpoint and store the ``gate`` record bound to its digest."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..errors import UsageError
from ..records.check import CheckItem, Gate
from ..store import Store

__all__ = ["GATE_CHECKS", "GateResult", "run_gate", "store_gate"]

GATE_CHECKS = ("export", "precision", "batching", "serving", "poison")


@dataclass
class GateResult:
    record: Gate
    oid: str | None = None
    raw: bytes | None = None

    @property
    def exit_code(self) -> int:
        return 0 if self.record.passed else 1


def run_gate(
    target: str,
    spec_source: str,
    *,
    store: Store | None = None,
    checks: list[str] | None = None,
    on_item: Callable[[CheckItem], None] | None = None,
) -> GateResult:
    """Load ``target`` into the spec's model and run the gate's checks (default: all)."""
    from .._version import __version__
    from ..check.ladder import environment
    from ..check.spec import load_spec
    from .load import load_weights

    wanted = list(checks or GATE_CHECKS)
    unknown = [c for c in wanted if c not in GATE_CHECKS]
    if unknown:
        raise UsageError(
            f"unknown gate check(s) {', '.join(unknown)}", hint=f"checks: {', '.join(GATE_CHECKS)}"
        )
    loaded = load_spec(spec_source)
    import torch

    from . import checks as gate_checks

    torch.manual_seed(0)
    model = loaded.spec.model()
    ck = loaded.settings.get("checkpoint", {})
    weights = load_weights(model, target, store, str(ck.get("state_key", "model")))
    model.eval()
    funcs: dict[str, Any] = {
        "export": gate_checks.export,
        "precision": gate_checks.precision,
        "batching": gate_checks.batching,
        "serving": gate_checks.serving,
        "poison": gate_checks.poison,
    }
    items: list[CheckItem] = []
    for name in (c for c in GATE_CHECKS if c in wanted):
        settings = dict(loaded.settings.get(name, {}))
        for item in funcs[name](model, loaded.spec, settings):
            items.append(item)
            if on_item is not None:
                on_item(item)
    passed = all(i.passed is not False for i in items if i.required)
    record = Gate(
        gate_id=f"gate-{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}",
        created=datetime.now(UTC),
        checkpoint=target,
        checkpoint_digest=weights.digest,
        checkpoint_source=weights.source,  # type: ignore[arg-type]
        run_id=weights.run_id,
        step=weights.step,
        spec=spec_source,
        items=items,
        passed=passed,
        environment=environment(),
        ledger_version=__version__,
    )
    return GateResult(record, None, loaded.raw)


def store_gate(store: Store, result: GateResult) -> GateResult:
    """Objects first (the YAML spec), then the record, then ``gates/<id>``."""
    rec = result.record
    if result.raw is not None:
        rec = rec.model_copy(update={"spec_digest": store.objects.put_bytes(result.raw)})
    oid = store.put_json(rec.to_json())
    store.set_ref(f"gates/{rec.gate_id}", oid, op="gate", passed=rec.passed)
    return GateResult(rec, oid, result.raw)
