"""What save, load, export and the CLI share: store and run lookup, ref names, the info object,
the run's ``checkpoints.jsonl`` events and the crash-test hook."""

from __future__ import annotations

import os
import re
import signal
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..._canonical import canonical_json, format_datetime, parse_json
from ...errors import UnknownIdError, UsageError
from ...records.base import record_from_json
from ...records.checkpoint import Checkpoint
from ...store import Store
from ...store.refs import check_ref_name

__all__ = [
    "CheckpointInfo",
    "fault",
    "info_of",
    "latest_ref",
    "list_steps",
    "open_store",
    "read_checkpoint",
    "resolve_checkpoint",
    "run_id_or_env",
    "step_ref",
    "write_event",
]

EVENTS_FILE = "checkpoints.jsonl"
# Test hook: SIGKILL this process when the save reaches the named phase (tests/checkpoint).
FAULT_ENV = "LEDGER_CKPT_KILL_AT"
_STEP_RE = re.compile(r"^step-(\d+)$")


@dataclass(frozen=True)
class CheckpointInfo:
    """What a save wrote or a load read. ``oid`` is the checkpoint record's id."""

    oid: str
    run_id: str
    step: int
    world_size: int
    created: str
    bytes_total: int
    bytes_new: int
    tensors: int
    seconds: float = 0.0
    refs: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def dedup_ratio(self) -> float:
        """Fraction of the checkpoint's bytes that were already stored (0: all new)."""
        return 1.0 - self.bytes_new / self.bytes_total if self.bytes_total else 1.0

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "dedup_ratio": self.dedup_ratio}


def fault(phase: str) -> None:
    """Crash on purpose at ``phase`` when the test hook asks for it (one env lookup)."""
    want = os.environ.get(FAULT_ENV)
    if want and want == phase:
        os.kill(os.getpid(), signal.SIGKILL)


def open_store(store: Store | str | Path | None) -> Store:
    """An explicit store or path, else ``$LEDGER_DIR``, else the nearest ``.ledger``."""
    if isinstance(store, Store):
        return store
    return Store.open(store)


def run_id_or_env(run_id: str | None) -> str:
    run = run_id or os.environ.get("LEDGER_RUN_ID")
    if not run:
        raise UsageError(
            "no run id for the checkpoint",
            hint="pass run_id=..., or run the script under `ledger record` (sets LEDGER_RUN_ID)",
        )
    try:
        check_ref_name(run)
    except UsageError:
        raise UsageError(
            f"invalid run id {run!r}", hint="use letters, digits, '_', '-', '.', '=', '+'"
        ) from None
    if "/" in run:
        raise UsageError(f"invalid run id {run!r}: it must not contain '/'")
    return run


def step_ref(run_id: str, step: int) -> str:
    return f"checkpoints/{run_id}/step-{step}"


def latest_ref(run_id: str) -> str:
    return f"checkpoints/{run_id}/latest"


def list_steps(store: Store, run_id: str) -> list[tuple[int, str]]:
    """(step, checkpoint id) of every step ref of a run, by step."""
    out = []
    for name, oid in store.refs.iter(f"checkpoints/{run_id}/"):
        m = _STEP_RE.match(name.rsplit("/", 1)[-1])
        if m and name.count("/") == 2:
            out.append((int(m.group(1)), oid))
    return sorted(out)


def read_checkpoint(store: Store, oid: str) -> Checkpoint:
    """The verified checkpoint record ``oid`` (refuses other kinds, newer schemas)."""
    try:
        value = parse_json(store.objects.get_bytes(oid))
    except (ValueError, UnicodeDecodeError):
        raise UsageError(f"{oid} is not a checkpoint (not a record)") from None
    rec = record_from_json(value, Checkpoint)
    return rec


def resolve_checkpoint(store: Store, target: str | int, run_id: str | None) -> str:
    """A checkpoint id from ``latest``, a step number, ``step-<n>``, a ref name or an id. A
    ref is taken only as the log backs it (``ledger.run.find.backed_ref``): a ref file no
    accepted log line made, or one that differs from the log, is refused (IntegrityError)."""
    from ...run.find import backed_ref

    if isinstance(target, int) or (isinstance(target, str) and target.isdigit()):
        target = f"step-{int(target)}"
    if target == "latest" or _STEP_RE.match(target):
        run = run_id_or_env(run_id)
        name = f"checkpoints/{run}/{target}"
        oid = backed_ref(store, name)
        if oid is None:
            have = [s for s, _ in list_steps(store, run)]
            raise UnknownIdError(
                f"no checkpoint {target} for run {run}",
                hint=f"saved steps: {have}" if have else "this run has no checkpoints",
            )
        return oid
    if "/" in target:
        oid = backed_ref(store, target)
        if oid is None:
            raise UnknownIdError(f"no ref {target!r}")
        return oid
    try:
        return store.objects.resolve(target)
    except UsageError:
        latest = backed_ref(store, latest_ref(target)) if "/" not in target else None
        if latest is not None:
            return latest
        latest = _latest_of_named_run(store, target)
        if latest is not None:
            return latest
        raise UnknownIdError(
            f"{target!r} names no checkpoint, run or object",
            hint="give 'latest', a step number, a ref, a checkpoint id, or a run",
        ) from None


def _latest_of_named_run(store: Store, text: str) -> str | None:
    """The latest checkpoint of the run ``text`` names (a name, prefix or short id), as every
    other command takes a run."""
    from ...run.find import backed_ref, resolve_run

    try:
        run = resolve_run(store, text)
    except UsageError:
        return None
    return backed_ref(store, latest_ref(run))


def info_of(rec: Checkpoint, oid: str, **extra: Any) -> CheckpointInfo:
    return CheckpointInfo(
        oid=oid,
        run_id=rec.run_id,
        step=rec.step,
        world_size=rec.world_size,
        created=format_datetime(rec.created),
        bytes_total=rec.bytes_total,
        bytes_new=rec.bytes_new,
        tensors=sum(s.tensors for s in rec.shards),
        **extra,
    )


def write_event(event: dict[str, Any]) -> None:
    """Append one line to ``$LEDGER_RUN_DIR/checkpoints.jsonl`` with a single write()."""
    run_dir = os.environ.get("LEDGER_RUN_DIR")
    if not run_dir:
        return
    line = canonical_json({**event, "time": format_datetime(datetime.now(UTC))}) + b"\n"
    fd = os.open(Path(run_dir) / EVENTS_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
