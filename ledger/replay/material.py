"""What replaying a run needs from the store, and what of it is missing (``ledger verify``).

A sealed run is replayable from its ledger when the store holds its contract, code snapshot
(patch, untracked files, snapshot tree), environment record, config files, every stored input
(a file's content; a directory's manifest and every file it lists), and, for the comparison,
its logs, metric series, captured outputs and RNG states. Inputs recorded with
``--no-store-inputs`` (the run record says ``stored: false``) or given by absolute path are not
the store's to hold: they are noted, not reported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import LedgerError
from ..records.base import record_from_json
from ..records.code import CodeSnapshot
from ..records.contract import Contract
from ..records.data import DataManifest, InputDigest
from ..records.run import Run
from ..records.tree import Tree
from ..store import Store
from ..store.verify import Problem, VerifyReport

__all__ = ["RunMaterial", "add_replay_checks", "check_all_runs", "check_run_material"]


@dataclass
class RunMaterial:
    run_id: str
    missing: list[str] = field(default_factory=list)  # one line per missing piece
    notes: list[str] = field(default_factory=list)  # material that is not the store's to hold


class _Checker:
    def __init__(self, store: Store, result: RunMaterial) -> None:
        self.store = store
        self.result = result

    def need(self, oid: str | None, what: str) -> bool:
        """True if ``oid`` is there; else records ``what`` as missing."""
        if oid is None or self.store.objects.has(oid):
            return True
        self.result.missing.append(f"{what} ({oid})")
        return False

    def load(self, oid: str, model: type[Any], what: str) -> Any:
        """The record ``oid`` parsed as ``model``, or None (recorded as missing or unreadable)."""
        if not self.need(oid, what):
            return None
        try:
            return record_from_json(self.store.get_json(oid), model)
        except (LedgerError, ValueError) as e:
            self.result.missing.append(f"{what} ({oid}) is unreadable: {e}")
            return None

    def tree(self, oid: str | None, what: str) -> None:
        if oid is None:
            return
        tree = self.load(oid, Tree, what)
        for e in tree.entries if tree is not None else []:
            self.need(e.oid, f"{what}: file {e.path}")

    def input_missing(self, d: InputDigest) -> str | None:
        """What the store lacks of input ``d``, or None."""
        has = self.store.objects.has
        if d.kind == "file":
            return None if has(d.digest) else f"its content ({d.digest})"
        if d.files is None or not has(d.files):
            return f"its file manifest ({d.files})"
        try:
            manifest = record_from_json(self.store.get_json(d.files), DataManifest)
        except (LedgerError, ValueError) as e:
            return f"its file manifest ({d.files}) is unreadable: {e}"
        gone = [e for e in manifest.entries if e.digest is not None and not has(e.digest)]
        if not gone:
            return None
        more = f" and {len(gone) - 1} more file(s)" if len(gone) > 1 else ""
        return f"file {gone[0].path} ({gone[0].digest}){more}"


def check_run_material(store: Store, run_id: str, record_oid: str) -> RunMaterial | None:
    """What the store lacks to replay one run; None for a run still in flight or whose record
    is itself missing or corrupt (``verify_store`` reports those)."""
    result = RunMaterial(run_id)
    try:
        run = record_from_json(store.get_json(record_oid), Run)
    except (LedgerError, ValueError):
        return None
    if run.status == "running":
        return None
    c = _Checker(store, result)
    if run.imported is not None:
        # Not the store's to hold: an imported run never had a contract (see records/run.py).
        result.notes.append(
            f"imported from {run.imported.source} (run {run.imported.run_id}): "
            "it has no contract and cannot be replayed"
        )
    contract = (
        None if run.contract is None else c.load(run.contract, Contract, "its contract record")
    )
    if contract is not None:
        code = c.load(contract.code, CodeSnapshot, "its code snapshot")
        if code is not None:
            c.need(code.patch, "the patch of its uncommitted changes")
            c.tree(code.untracked, "its untracked files")
            c.tree(code.snapshot, "its code snapshot tree")
        c.need(contract.environment, "its environment record")
        for cf in contract.config_files:
            c.need(cf.get("oid"), f"config file {cf.get('path')}")
        stored = {i: check.stored for i, check in enumerate(run.inputs_after)}
        for i, raw in enumerate(contract.inputs):
            _check_input(c, InputDigest.model_validate(raw), stored.get(i))
    c.need(run.resolved_config, "its resolved config record")
    c.need(run.stdout, "its stdout log")
    c.need(run.stderr, "its stderr log")
    for m in run.metrics:
        c.need(m.series, f"metric series {m.name} ({m.source})")
    for out in run.outputs:
        c.tree(out.tree, f"captured output {out.path}")
    for r in (run.runtime or {}).get("rng_states") or []:
        if isinstance(r, dict) and isinstance(r.get("state"), str):
            c.need(r["state"], f"RNG state {r.get('label')} of rank {r.get('rank')}")
    return result


def _check_input(c: _Checker, d: InputDigest, stored: bool | None) -> None:
    if d.path.startswith("/"):
        return  # replay uses an absolute input in place, after checking its digest
    missing = c.input_missing(d)
    if missing is None:
        return
    if stored is False:
        fallback = "DVC's cache" if d.dvc is not None else "nowhere: replay will fail"
        c.result.notes.append(
            f"input {d.path} was recorded with --no-store-inputs; replay restores it from "
            f"{fallback}"
        )
    elif d.dvc is not None:
        c.result.notes.append(
            f"input {d.path}: {missing} is not in the store; replay will take it from the DVC "
            f"cache of {d.dvc.repo_root}"
        )
    else:
        c.result.missing.append(f"input {d.path}: {missing}")


def check_all_runs(
    store: Store, progress: Callable[[str], None] | None = None
) -> list[RunMaterial]:
    """``check_run_material`` for every run ref; only runs with something to say."""
    out = []
    for name, _ in store.refs.iter("runs/"):
        try:
            oid = store.refs.get(name)
        except LedgerError:
            continue  # an unreadable ref: verify_store reports it as bad-ref
        if oid is None or not store.objects.has(oid):
            continue
        run_id = name.split("/", 1)[1]
        found = check_run_material(store, run_id, oid)
        if progress is not None:
            progress(run_id)
        if found is not None and (found.missing or found.notes):
            out.append(found)
    return out


def add_replay_checks(store: Store, report: VerifyReport) -> None:
    """Add to a ``verify_store`` report one ``unreplayable`` problem per run that lacks
    replay material, and the notes on material that is not the store's to hold."""
    for found in check_all_runs(store):
        for what in found.missing:
            report.problems.append(
                Problem(
                    "unreplayable",
                    found.run_id,
                    f"run {found.run_id} cannot be replayed: {what} is missing",
                )
            )
        report.notes += [f"run {found.run_id}: {n}" for n in found.notes]
