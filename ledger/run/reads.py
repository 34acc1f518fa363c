"""At seal: the files the program read (``ledger.capture.reads``), stored as the run's Reads
record; those a replay will not have are named, or, with ``--auto-inputs``, digested and
stored as inputs through the path ``--input`` takes (``ledger.capture.data``), and the sealed
run links a contract that lists them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..capture.boundary import for_store
from ..capture.reads import classify, collect, missing_message, missing_note
from ..store import Store
from .options import RecordOptions

if TYPE_CHECKING:
    from ..records.data import InputDigest

__all__ = ["MAX_AUTO_INPUTS", "SealedReads", "seal_reads"]

MAX_AUTO_INPUTS = 10_000  # files --auto-inputs adds to one contract; the rest are named


@dataclass
class SealedReads:
    oid: str | None = None  # the Reads record
    contract: str | None = None  # the contract with the --auto-inputs, when it changed
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def seal_reads(
    store: Store, opts: RecordOptions, frozen: Any, staging: Path, started: float
) -> SealedReads:
    """Store what the run read; with ``opts.auto_inputs``, extend ``frozen`` (its inputs and
    contract) with the files a replay would not have. A replay records no Reads: its code and
    inputs are the original's."""
    out = SealedReads()
    if opts.replay_of is not None:
        return out
    paths, out.notes = collect(staging)
    if not paths:
        return out
    code = store.get_json(frozen.contract_json["code"])
    inputs = [str(d.abspath) for d in frozen.inputs]
    found = classify(paths, code=code, store=store, cwd=opts.cwd, inputs=inputs, started=started)
    found.notes += out.notes
    from ..capture.secrets import skipped_secret_file

    # Credential files (.env...) are never stored, as code capture never stores them: named,
    # without the --input fix, and never taken by --auto-inputs.
    secret = [m for m in found.missing if skipped_secret_file(m["path"])]
    missing = [m for m in found.missing if not skipped_secret_file(m["path"])]
    if secret:
        names = ", ".join(m["path"] for m in secret[:10]) + (" ..." if len(secret) > 10 else "")
        text = (
            f"the run read credential files that a replay will not have and that ledger never "
            f"stores ({len(secret)}): {names}; a replay needs them in place"
        )
        out.warnings.append(text)
        out.notes.append(text)
    if missing and opts.auto_inputs:
        missing, stored_note = _auto_inputs(store, opts, frozen, missing)
        out.notes.append(stored_note)
        out.contract = store.put_json(frozen.contract_json)
    if missing:
        out.warnings.append("\n".join(missing_message(missing)))
        out.notes.append(missing_note(missing))
    record = found.record()
    scrubber = frozen.scrubber
    if scrubber is not None:  # file names pass the boundary as every captured string does
        record["files"] = for_store("json", record["files"], scrubber, "the files read")
    out.oid = store.put_json(record)
    return out


def _auto_inputs(
    store: Store, opts: RecordOptions, frozen: Any, missing: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], str]:
    """Digest and store ``missing`` as inputs; returns what could not be, and a note."""
    from .._progress import stage
    from ..capture.data import digest_input, store_inputs
    from ..errors import LedgerError

    added: list[InputDigest] = []
    left: list[dict[str, Any]] = []
    with stage("storing the files the run read (--auto-inputs)"):
        for m in missing:
            if len(added) >= MAX_AUTO_INPUTS:
                left.append(m)
                continue
            try:
                d = digest_input(Path(m["abspath"]), frozen.cache)
            except LedgerError:
                left.append(m)  # unreadable now, or no longer a regular file
                continue
            given = d.model_copy(update={"path": m["path"]})
            given._manifest = d._manifest
            added.append(given)
        if opts.store_inputs:
            store_inputs(added, store)
    frozen.inputs = [*frozen.inputs, *added]
    frozen.contract_json = {
        **frozen.contract_json,
        "inputs": [*frozen.contract_json["inputs"], *(d.model_dump(mode="json") for d in added)],
    }
    frozen.__dict__.pop("contract", None)  # the cached model, if it was built
    how = "stored" if opts.store_inputs else "digested (--no-store-inputs)"
    note = (
        f"--auto-inputs: {len(added)} file{'s' if len(added) != 1 else ''} the run read "
        f"{how} as inputs; a replay restores them"
    )
    return left, note
