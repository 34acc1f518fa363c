"""``Ledger.run(id)``: one run and everything bound to it, as Python."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RunView", "run_view"]


@dataclass(frozen=True)
class RunView:
    """One run, read from its hashed records: what ``ledger show`` shows, as Python."""

    id: str
    record_id: str  # the run record's object id
    name: str | None  # curated (``ledger rename``) or recorded
    status: str
    tags: dict[str, str]
    retracted: dict[str, Any] | None  # {"reason", "time"} when ``ledger retract``ed
    record: dict[str, Any] = field(repr=False)  # the run record
    contract: dict[str, Any] | None = field(repr=False)
    config: dict[str, Any] | None = field(repr=False)  # the resolved config
    params: dict[str, Any] = field(repr=False)  # the resolved config, flattened with dots
    inputs: list[dict[str, Any]] = field(repr=False)  # path, kind, digest, n_files, n_bytes...
    outputs: list[dict[str, Any]] = field(repr=False)  # path, oid, size, output
    checkpoints: list[dict[str, Any]] = field(repr=False)  # saves and loads, in order
    replays: list[dict[str, Any]] = field(repr=False)  # id, status, verdicts
    verdicts: list[dict[str, Any]] = field(repr=False)  # every verdict about this run
    _ledger: Any = field(repr=False, compare=False)  # the Ledger it came from

    @property
    def metric_names(self) -> list[str]:
        return sorted({str(m.get("name")) for m in self.record.get("metrics") or []})

    def metrics(self, names: str | Sequence[str] | None = None) -> pd.DataFrame:
        """This run's metric series as ``Ledger.metrics`` gives them."""
        return self._ledger.metrics([self.id], names)

    def output_bytes(self, path: str) -> bytes:
        """The bytes of one output file (``out/model.pt``), read back through the store."""
        from ..run.outputs import find_output

        f = find_output(self._ledger.store, self.record, path)
        data: bytes = self._ledger.store.objects.get_bytes(f.oid)
        return data


def run_view(ledger: Any, text: str) -> RunView:
    """``ledger.run(text)``: ``describe_run`` (what ``ledger show`` reads), with the run's
    curation, output files and published checkpoints."""
    from ..index.tables import flatten_params
    from ..run.curate import read_curation
    from ..run.find import apply_curation, backed_refs
    from ..run.outputs import output_files
    from ..run.show import describe_run

    store = ledger.store
    info = describe_run(store, text)  # what `ledger show` reads, from hashed records
    ledger.warnings = list(info.get("warnings", []))
    rec: dict[str, Any] = info["run"]
    run_id = str(rec["run_id"])
    _, curation = read_curation(store, run_id)
    row = apply_curation({"name": rec.get("name"), "tags": dict(rec.get("tags") or {})}, curation)
    contract = info.get("contract") if isinstance(info.get("contract"), dict) else None
    config = info.get("resolved_config") if isinstance(info.get("resolved_config"), dict) else None
    resolved = config.get("resolved") if config else None
    after = {i.get("path"): i for i in rec.get("inputs_after") or []}
    inputs = [
        {**i, "changed": after.get(i.get("path"), {}).get("changed")}
        for i in (contract or {}).get("inputs") or []
    ]
    published = [
        {"ref": ref, "checkpoint": oid}
        for ref, oid in backed_refs(store, f"checkpoints/{run_id}/", ledger.warnings)
    ]
    verdicts = info.get("verdicts") or []
    replays = [
        r | {"verdicts": [v for v in verdicts if r["run_id"] in v.get("replays", [])]}
        for r in info.get("replays") or []
    ]
    return RunView(
        id=run_id,
        record_id=str(info["record"]),
        name=row["name"],
        status=str(rec.get("status")),
        tags=row["tags"],
        retracted=row["retracted"],
        record=rec,
        contract=contract,
        config=resolved if isinstance(resolved, dict) else None,
        params=flatten_params(resolved) if isinstance(resolved, dict) else {},
        inputs=inputs,
        outputs=[asdict(f) for f in output_files(store, rec)],
        checkpoints=[*(rec.get("checkpoints") or []), *published],
        replays=replays,
        verdicts=verdicts,
        _ledger=ledger,
    )
