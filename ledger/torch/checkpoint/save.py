"""``save_checkpoint``: write every rank's tensors and shard manifest, check them all on rank 0,
then publish with one ref move. Until ``latest`` moves, the previous checkpoint is the latest.

Order (each step durable before the next; docs/format.md, "Publishing a checkpoint"):

1. every rank: capture RNG states first, then tensors as chunk objects and the JSON skeleton
   (fsynced; written side by side), then the shard manifest (its content written before the
   chunks' names are made durable and fsynced while they are, its name given after:
   ``write.StagedObject``); a DTensor
   is stored as its local piece, its entry carries the layout (``layout``). One process
   stages the record (step 3) and the two ref files' temp copies (``Store.stage_ref``)
   beside its manifest, fsynced at the same time, and checks its shard (step 2) as it wrote
   it, meanwhile too (``_check_manifest``), then names its manifest and fsyncs its folder;
2. every rank sends (step, shard id) to rank 0 as JSON (one ``gather``,
   ``collectives.gather_json``); rank 0 re-reads every shard manifest (its own before the
   gather), checks equal steps and world size, that every chunk object exists with its size
   and that the ranks' pieces of each DTensor make it whole;
3. rank 0 writes the ``checkpoint`` record (staged from the ranks' summaries, then fsynced
   while it fsyncs the folders of their shard manifests, which each rank named without that
   fsync, and the folder above one that a rank made), then
   moves ``checkpoints/<run>/step-<n>`` and ``checkpoints/<run>/latest`` (under the ref
   lock, taken while the record's folder is fsynced: both log entries in one append, once
   that fsync is done, their files' temp copies fsynced before it (staged with the record)
   or meanwhile, then
   the step ref's file renamed, then ``latest``'s, then one fsync of their folder:
   ``Store.set_refs``);
4. retention drops step refs beyond ``keep_last`` (objects go with ``ledger gc``); rank 0
   appends a ``save`` event to ``$LEDGER_RUN_DIR/checkpoints.jsonl`` and sends the verdict
   to every rank (one ``broadcast``, ``collectives.broadcast_json``); all ranks return.

With ``background=True`` step 1's ``state_dict()`` calls and a copy of the tensors happen
before the call returns; the rest runs in a thread (``background``), gathering on a gloo
group of its own, in the same order.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, overload

from ..._canonical import canonical_json
from ...errors import IntegrityError, LedgerError, MissingObjectError, UsageError
from ...records.base import record_from_json
from ...records.checkpoint import (
    Checkpoint,
    CheckpointShard,
    ShardLayout,
    ShardSummary,
    TensorEntry,
)
from ...runtime.rng import capture_rng
from ...store import Store
from ...store.objects import header_for, raw_payload_offset
from ...store.repo import StagedRef
from .background import (
    PendingCheckpoint,
    caller_lock,
    snapshot,
    start,
    take_copying,
    wait_inflight,
)
from .codec import encode_state
from .collectives import ROOM, background_group, broadcast_json, gather_json, rank_and_world
from .common import (
    CheckpointInfo,
    fault,
    info_of,
    latest_ref,
    list_steps,
    open_store,
    run_id_or_env,
    step_ref,
    write_event,
)
from .forkcopy import ForkedCopy
from .io import CHUNK_SIZE, WriteStats, map_threads, min_saving, run_aside, write_tensors
from .layout import describe, is_dtensor
from .write import StagedObject, fsync_dirs

__all__ = ["fit_report", "save_checkpoint"]


@overload
def save_checkpoint(
    state: dict[str, Any],
    *,
    step: int,
    store: Store | str | Path | None = None,
    run_id: str | None = None,
    keep_last: int | None = None,
    note: str = "",
    chunk_size: int = CHUNK_SIZE,
    rng: bool = True,
    trust_version_counter: bool = False,
    compress: bool | None = None,
    background: Literal[False] = False,
) -> CheckpointInfo: ...


@overload
def save_checkpoint(
    state: dict[str, Any],
    *,
    step: int,
    store: Store | str | Path | None = None,
    run_id: str | None = None,
    keep_last: int | None = None,
    note: str = "",
    chunk_size: int = CHUNK_SIZE,
    rng: bool = True,
    trust_version_counter: bool = False,
    compress: bool | None = None,
    background: Literal[True],
) -> PendingCheckpoint: ...


@overload
def save_checkpoint(
    state: dict[str, Any],
    *,
    step: int,
    store: Store | str | Path | None = None,
    run_id: str | None = None,
    keep_last: int | None = None,
    note: str = "",
    chunk_size: int = CHUNK_SIZE,
    rng: bool = True,
    trust_version_counter: bool = False,
    compress: bool | None = None,
    background: bool,
) -> CheckpointInfo | PendingCheckpoint: ...


def save_checkpoint(
    state: dict[str, Any],
    *,
    step: int,
    store: Store | str | Path | None = None,
    run_id: str | None = None,
    keep_last: int | None = None,
    note: str = "",
    chunk_size: int = CHUNK_SIZE,
    rng: bool = True,
    trust_version_counter: bool = False,
    compress: bool | None = None,
    background: bool = False,
) -> CheckpointInfo | PendingCheckpoint:
    """Save this rank's ``state`` as part of checkpoint ``step`` and publish it atomically.

    Under torch.distributed every rank must call this with the same ``step``. Objects with
    ``state_dict()`` (model, optimizer, scheduler, scaler, sampler, StatefulDataLoader) are
    saved through it; RNG states of this process are captured before anything else
    (``rng=False`` skips them, for imports of other checkpoints).

    A chunk whose bytes equal what the previous save of its tensor stored in this ledger is
    found by a bitwise comparison with that object's mapped file, not hashed again
    (reuse: the last save's bytes stay mapped from the page cache).

    ``background=True`` copies the tensors, returns a ``PendingCheckpoint`` at once and hashes,
    writes and publishes in a thread (background: one copy of the state in staging
    buffers kept between saves, one save in flight; the next save and interpreter exit wait
    for it).

    ``compress``: by default (None) a chunk is compressed (zstd) only when that makes it at
    least a third smaller (zeros, masks, integer ids, sparse tensors); float weights are
    stored raw, since compressing their exponent bytes takes the save longer than writing
    them. ``True`` compresses every chunk zstd makes 10% smaller (smaller checkpoints, slower
    saves: 10-40 ms of CPU per 8 MB of float weights); ``False`` never compresses.

    ``trust_version_counter=True`` skips even comparing CPU tensors whose storage and autograd
    version counter are unchanged since this process's previous save. It is faster, and wrong
    if your code writes tensors without bumping the counter (``p.data.mul_()``, numpy views).
    """
    t0 = time.perf_counter()  # blocked_seconds and seconds count the RNG capture too
    # First: nothing below may consume randomness before it is recorded.
    rng_state = capture_rng() if rng else None
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise UsageError(f"step must be a non-negative int, got {step!r}")
    if keep_last is not None and (not isinstance(keep_last, int) or keep_last < 2):
        raise UsageError(
            f"keep_last={keep_last!r} would leave no older checkpoint to fall back on",
            hint="use keep_last=2 or more, or None to keep every checkpoint",
        )
    if not isinstance(state, dict):
        raise UsageError(f"state must be a dict, got {type(state).__name__}")
    min_saving(compress)  # a bad value is refused before anything is written
    if background and trust_version_counter:
        raise UsageError(
            "trust_version_counter=True is not supported with background=True",
            hint="a background save copies every tensor first; drop one of the two options",
        )
    st = open_store(store)
    run = run_id_or_env(run_id)
    rank, world = rank_and_world()
    # Two threads saving at once take turns: the second never copies into staging buffers
    # the first background save still writes from, nor starts a second save in flight.
    with caller_lock:
        wait_inflight()  # at most one save in flight, and a failed background save is reported
        group = background_group() if background else None

        job = _Job(st, run, step, rank, world, rng_state, chunk_size, trust_version_counter)
        job.compress = compress
        job.keep_last, job.note, job.group, job.t0 = keep_last, note, group, t0
        try:
            skeleton, tensors = encode_state(state)
            job.skeleton = skeleton
            tensors, job.layouts = local_pieces(tensors)
            job.tensors = snapshot(tensors) if background else tensors
            job.copying = take_copying() if background else None
        except LedgerError as e:
            if world == 1:
                raise
            job.error, job.cause = f"rank {rank}: {e}", e
        except Exception as e:  # other ranks must learn of it or they would wait forever
            if world == 1:
                raise
            job.error, job.cause = f"rank {rank}: {type(e).__name__}: {e}", e
        if background:
            return start(step, t0, job.run)
        return job.run()


class _Job:
    """One rank's part of a save once its state is encoded: write, gather, publish."""

    def __init__(
        self,
        st: Store,
        run: str,
        step: int,
        rank: int,
        world: int,
        rng: Any,
        chunk_size: int,
        trust_version_counter: bool,
    ) -> None:
        self.st, self.run_id, self.step, self.rank, self.world = st, run, step, rank, world
        self.rng, self.chunk_size, self.trust = rng, chunk_size, trust_version_counter
        self.skeleton: Any = None
        self.tensors: list[tuple[str, Any]] = []
        self.error: str | None = None
        self.cause: BaseException | None = None  # of ``error``, raised from (its whole text)
        self.keep_last: int | None = None
        self.note = ""
        self.group: Any = None
        self.t0 = 0.0
        self.compress: bool | None = None
        self.layouts: dict[int, ShardLayout] = {}
        self.copying: ForkedCopy | None = None  # a child still filling the staged tensors
        # One process: the checkpoint record, staged beside the shard manifest (``_publish``),
        # and the temp copies of the two ref files that will hold its id (``Store.stage_ref``).
        self.record: tuple[Checkpoint, StagedObject] | None = None
        self.refs: list[StagedRef] = []
        # One process: its shard as it wrote it, checked while its chunks' folders were
        # fsynced (``_check_manifest``).
        self.own: tuple[ShardSummary, CheckpointShard] | None = None
        self.summary: dict[str, int] = {}  # of the shard manifest, sent to rank 0
        # Whether naming the shard manifest made its fan folder: rank 0 then fsyncs the
        # folder above it too (``_stage_record``), else only the manifest's own folder.
        self.made_folder = False

    def run(self) -> CheckpointInfo:
        st, rank, world, step = self.st, self.rank, self.world, self.step
        error = self.error
        shard_oid: str | None = None
        if error is None:
            try:
                if self.copying is not None:
                    self.copying.wait()
                shard_oid = self._write_shard()
            except LedgerError as e:
                error, self.cause = f"rank {rank}: {e}", e
                if world == 1:
                    raise
            except Exception as e:  # other ranks must learn of it or they would wait forever
                if world == 1:
                    raise
                error, self.cause = f"rank {rank}: {type(e).__name__}: {e}", e
        self.tensors = []  # a background save's copy is no longer needed
        report = {
            "rank": rank,
            "step": step,
            "shard": shard_oid,
            "error": error,
            "summary": self.summary,
            "made_folder": self.made_folder,
        }
        # Rank 0 checks its own shard while the other ranks may still be writing theirs (the
        # same check as theirs after the gather, off the path from the gather to ``latest``);
        # one that fails is checked again after the gather, which reports it.
        own = self.own
        if rank == 0 and world > 1 and error is None and shard_oid is not None:
            try:
                own = _check_shard(st, shard_oid, self.run_id, step, 0, world)
            except Exception:  # never raised before the gather: the other ranks wait in it
                own = None
        # Only rank 0 reads the reports; the verdict comes back in one broadcast.
        reports = gather_json(fit_report(report), self.group)
        verdict: dict[str, Any] = {}
        if reports is not None:  # rank 0
            try:
                verdict = _publish(
                    st,
                    reports,
                    self.run_id,
                    step,
                    world,
                    self.keep_last,
                    self.note,
                    self.record,
                    own,
                    self.refs,
                )
            except LedgerError as e:
                if world == 1:
                    raise
                verdict = {"error": str(e)}
            finally:
                for ref in self.refs:  # unless renamed into place: an error came first
                    ref.discard()
        if self.record is not None:
            self.record[1].discard()  # unless named: an error came first
        verdict = broadcast_json(verdict, self.group)
        if verdict.get("error"):
            raise IntegrityError(
                f"checkpoint step {step} was not published: {verdict['error']}"
            ) from self.cause
        if self.record is not None and self.record[1].oid == verdict["oid"]:
            rec = self.record[0]  # what was just written, and checked against the shard
        else:
            rec = record_from_json(st.get_json(verdict["oid"]), Checkpoint)
        return info_of(
            rec,
            verdict["oid"],
            seconds=time.perf_counter() - self.t0,
            refs=verdict["refs"],
            note=self.note,
        )

    def _write_shard(self) -> str:
        st = self.st
        fault("before-objects")
        # The skeleton is one more object nothing refers to yet: written beside the chunks,
        # its fsyncs are not one more step on the way to the shard manifest.
        skeleton: list[Any] = []
        put = run_aside(lambda: _put_json(st, self.skeleton, skeleton))
        staged: list[StagedObject] = []

        def stage(entries: list[TensorEntry], stats: WriteStats) -> Callable[[], None]:
            """The shard manifest's content, written now and made durable (what this returns)
            while the chunks' names are; named once they are (it links to them)."""
            put.wait()
            if isinstance(skeleton[0], BaseException):
                raise skeleton[0]
            for i, layout in self.layouts.items():
                entries[i] = entries[i].model_copy(update={"layout": layout})
            shard = CheckpointShard(
                run_id=self.run_id,
                step=self.step,
                rank=self.rank,
                world_size=self.world,
                chunk_size=self.chunk_size,
                tensors=entries,
                state=skeleton[0],
                rng=self.rng,
                created=datetime.now(UTC),
                bytes_total=stats.bytes_total,
                bytes_new=stats.bytes_new,
            )
            manifest = StagedObject(st.objects, canonical_json(shard.to_json()), sync=False)
            staged.append(manifest)
            self.summary = {
                "tensors": len(entries),
                "bytes_total": stats.bytes_total,
                "bytes_new": stats.bytes_new,
            }
            if self.world == 1:  # the record is known too: staged beside it, named after it
                summary = ShardSummary(
                    rank=0,
                    manifest=manifest.oid,
                    tensors=len(entries),
                    bytes_total=stats.bytes_total,
                    bytes_new=stats.bytes_new,
                )
                rec = _record(self.run_id, self.step, 1, [summary], self.note)
                record = StagedObject(st.objects, canonical_json(rec.to_json()), sync=False)
                self.record = (rec, record)
                # The ref files' temp copies will hold the record's id: written and fsynced
                # from now on, beside it, not while the log append is (``Store.stage_ref``).
                self.refs = [
                    st.stage_ref(step_ref(self.run_id, self.step), record.oid),
                    st.stage_ref(latest_ref(self.run_id), record.oid),
                ]

                own: list[tuple[ShardSummary, CheckpointShard]] = []

                def check() -> None:
                    # The shard as written (the manifest's content, not read back): its
                    # chunks are named, which is all the check needs. One that fails is
                    # checked again from the named manifest, and raised, by ``_publish``.
                    with contextlib.suppress(Exception):
                        own.append(
                            _check_manifest(st, shard, manifest.oid, self.run_id, self.step, 0, 1)
                        )

                def both() -> None:
                    # At once: two fsyncs in a row took two journal commits (the record's
                    # blocks are allocated only when its own fsync writes it back). The
                    # check (CPU: a stat per chunk) waited for the manifest's folder fsync
                    # after these, and took longer than it (1.6 ms against 0.3 ms here).
                    _run_all([manifest.sync, record.sync, check])
                    self.own = own[0] if own else None

                return both
            return manifest.sync

        try:
            write_tensors(
                st.objects,
                self.tensors,
                chunk_size=self.chunk_size,
                fault=fault,
                trust_version_counter=self.trust,
                compress=self.compress,
                meanwhile=stage,
            )
            fault("after-objects")
            # Ranks of a group name their manifest; rank 0 makes the names durable, beside
            # staging the record (``_publish``): one fsync fewer in a row before the exchange.
            # One process makes its own durable now (its shard was checked meanwhile).
            staged[0].name(durable=self.world == 1)
            self.made_folder = staged[0].made_folder
        except BaseException:
            # The record and ref copies staged beside the manifest (one process) go with it:
            # nothing will name them, and their temp files would wait in tmp/ for a gc.
            if self.record is not None:
                self.record[1].discard()
                self.record = None
            for ref in self.refs:
                ref.discard()
            self.refs = []
            raise
        finally:
            put.wait()
            for s in staged:
                s.discard()
        if isinstance(skeleton[0], BaseException):
            raise skeleton[0]
        fault("after-shard")
        return staged[0].oid


def fit_report(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` as it fits one slot of ``collectives.gather_json``: a rank's error message
    longer than that is cut, and says how much was cut (the rank raises from its own error,
    which keeps all of it); nothing else in a report grows with the state."""
    error = report.get("error")
    if len(canonical_json(report)) <= ROOM or not isinstance(error, str):
        return report

    def cut(keep: int) -> dict[str, Any]:
        return {**report, "error": f"{error[:keep]}… ({len(error) - keep} characters cut)"}

    # The longest start that fits (JSON escapes and UTF-8 make characters unequal in bytes).
    lo, hi = 0, len(error)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(canonical_json(cut(mid))) <= ROOM:
            lo = mid
        else:
            hi = mid - 1
    return cut(lo)


def local_pieces(
    tensors: list[tuple[str, Any]],
) -> tuple[list[tuple[str, Any]], dict[int, ShardLayout]]:
    """Each DTensor replaced by its local piece; the layouts by index into the list."""
    out: list[tuple[str, Any]] = []
    layouts: dict[int, ShardLayout] = {}
    for i, (key, t) in enumerate(tensors):
        if is_dtensor(t):
            t, layouts[i] = describe(t, key)
        out.append((key, t))
    return out, layouts


def _put_json(st: Store, value: Any, out: list[Any]) -> None:
    """``st.put_json(value)`` for a thread: the id, or the error, is appended to ``out``."""
    try:
        out.append(st.put_json(value))
    except BaseException as e:  # raised by the caller once the thread is joined
        out.append(e)


def _check_shard(
    st: Store, oid: str, run: str, step: int, rank: int, world: int
) -> tuple[ShardSummary, CheckpointShard]:
    """Rank ``rank``'s shard manifest, read once (its summary for the record, and the record
    itself for the layout check), after checking it is that rank's for this step and that its
    objects are stored (``_check_manifest``)."""
    rec = record_from_json(st.get_json(oid), CheckpointShard)
    return _check_manifest(st, rec, oid, run, step, rank, world)


def _check_manifest(
    st: Store, rec: CheckpointShard, oid: str, run: str, step: int, rank: int, world: int
) -> tuple[ShardSummary, CheckpointShard]:
    """``_check_shard`` of the manifest ``rec`` whose id is ``oid`` (read back, or as one
    process wrote it): that it is that rank's for this step and that its objects are
    stored: one ``stat`` per chunk, and a look at the header only of a chunk whose size is
    not that of its raw bytes as written now (compressed, stored by an older ledger with a
    one-byte header, or cut short)."""
    if (rec.run_id, rec.step, rec.rank, rec.world_size) != (run, step, rank, world):
        raise IntegrityError(
            f"shard {oid} is for run {rec.run_id} step {rec.step} rank {rec.rank}/"
            f"{rec.world_size}, expected {run} step {step} rank {rank}/{world}"
        )
    if not st.objects.touch(rec.state):
        raise MissingObjectError(rec.state, f"rank {rank}: state object {rec.state} is missing")
    for e in rec.tensors:
        left = e.nbytes
        for c in e.chunks:
            want = min(left, rec.chunk_size)
            left -= want
            name = st.objects.name_of(c)
            try:
                size = os.stat(name).st_size
                if size == len(header_for(want, compressed=False)) + want:
                    continue  # a raw object of the chunk's size (or a compressed one as long)
                with open(name, "rb") as f:
                    at = raw_payload_offset(f.fileno(), oid=c)
            except FileNotFoundError:
                raise MissingObjectError(
                    c, f"rank {rank}: tensor {e.key}: object {c} is missing"
                ) from None
            if at is not None and size - at != want:
                raise IntegrityError(
                    f"rank {rank}: tensor {e.key}: object {c} holds {size - at} bytes, "
                    f"expected {want}"
                )
    summary = ShardSummary(
        rank=rank,
        manifest=oid,
        tensors=len(rec.tensors),
        bytes_total=rec.bytes_total,
        bytes_new=rec.bytes_new,
    )
    return summary, rec


def _publish(
    st: Store,
    reports: list[dict[str, Any]],
    run: str,
    step: int,
    world: int,
    keep_last: int | None,
    note: str,
    staged: tuple[Checkpoint, StagedObject] | None = None,
    own: tuple[ShardSummary, CheckpointShard] | None = None,
    refs: list[StagedRef] | None = None,
) -> dict[str, Any]:
    """Check the ranks' shards, write the record and move the refs. ``staged``: the record
    as one process staged it beside its shard manifest (its content durable already), named
    here if it is the record the checks give. ``own``: rank 0's shard, checked by rank 0
    before the gather, or by one process as it wrote it (``_check_manifest``), not checked
    again. ``refs``: the ref files' temp copies staged with the record (``staged``'s,
    or those ``_stage_record`` adds), used by ``Store.set_refs`` if they hold the record's id;
    the caller discards them."""
    refs = [] if refs is None else refs
    errors = [r["error"] for r in reports if r.get("error")]
    if errors:
        return {"error": "; ".join(errors)}
    steps = {r["step"] for r in reports}
    if steps != {step}:
        return {"error": f"ranks saved different steps: {sorted(steps)}"}
    if world > 1:
        staged, checked = _stage_record(st, reports, run, step, world, note, own, refs)
    # The record's name made durable (its folder fsynced) while ``set_refs`` takes the ref
    # lock and reads the log's tail and the ref files, before the append that names it.
    named: Callable[[], None] | None = None
    try:
        if world == 1:
            checked = [
                own
                if own is not None and own[0].manifest == reports[0]["shard"]
                else _check_shard(st, reports[0]["shard"], run, step, 0, world)
            ]
        shards = [summary for summary, _rec in checked]
        gap = _layout_gap([rec for _summary, rec in checked])
        if gap:
            return {"error": gap}
        rec = _record(run, step, world, shards, note)
        if staged is not None and staged[0].model_copy(update={"created": rec.created}) == rec:
            rec, oid = staged[0], staged[1].oid
            named = staged[1].name_aside()
        else:  # (a rank's summary that its manifest contradicts: the manifest is believed)
            oid = st.put_json(rec.to_json())
    finally:
        if staged is not None:
            staged[1].discard()
    fault("after-record")
    # Both log entries in one append (the commit point), then the step ref's file, then
    # ``latest``'s: until ``latest`` moves, the previous checkpoint is the latest.
    st.set_refs(
        [
            (step_ref(run, step), oid, "checkpoint", {"step": step}),
            (latest_ref(run), oid, "publish", {"step": step}),
        ],
        after_each=lambda name: fault("after-step-ref") if name == step_ref(run, step) else None,
        after_log=lambda: fault("after-log"),
        staged=refs,
        before_append=named,
    )
    fault("after-latest-ref")
    if keep_last is not None:
        _retain(st, run, step, keep_last)
    write_event(
        {
            "event": "save",
            "checkpoint": oid,
            "run_id": run,
            "step": step,
            "rank": 0,  # rank 0 publishes
            "world_size": world,
            "bytes_total": rec.bytes_total,
            "bytes_new": rec.bytes_new,
        }
    )
    return {"oid": oid, "refs": [step_ref(run, step), latest_ref(run)]}


def _stage_record(
    st: Store,
    reports: list[dict[str, Any]],
    run: str,
    step: int,
    world: int,
    note: str,
    own: tuple[ShardSummary, CheckpointShard] | None = None,
    refs: list[StagedRef] | None = None,
) -> tuple[tuple[Checkpoint, StagedObject] | None, list[tuple[ShardSummary, CheckpointShard]]]:
    """The record as the ranks' reports describe it, its content written first and then
    fsynced on a thread while others fsync the folders of the ranks' shard manifests (each
    rank named its own, ``_write_shard``) and one checks every rank's shard (``_check_shard``:
    it reads the manifests and stats their chunks, which needs none of those fsyncs done):
    the record's name comes only after all of them, once the checks agree with it. Written
    before any of those fsyncs starts, its temp file is in the file system's journal by the
    time they commit: one commit can make all of them durable, where a record written while
    they ran took a second one. The folder above a manifest's folder is fsynced only when a
    rank made that folder (``made_folder``; a report without it counts as made): the folder
    above changed then, and only then. ``own``: rank 0's shard as rank 0 checked it before
    the gather, used for rank 0 if its report names the same manifest. The staged record is
    None (the folders fsynced all the same) when the reports cannot make a record: it is then
    written after the checks, as before. A failed check is raised. The temp copies of the two
    ref files that will hold the staged record's id are written and fsynced meanwhile too
    (``Store.stage_ref``), added to ``refs`` for ``Store.set_refs``."""
    fans = {st.objects.path_of(r["shard"]).parent for r in reports}
    above = {f.parent for f in fans} if any(r.get("made_folder", True) for r in reports) else set()
    staged: tuple[Checkpoint, StagedObject] | None = None
    try:
        summaries = [
            ShardSummary(rank=i, manifest=r["shard"], **(r.get("summary") or {}))
            for i, r in enumerate(reports)
        ]
        rec = _record(run, step, world, summaries, note)
        staged = (rec, StagedObject(st.objects, canonical_json(rec.to_json()), sync=False))
    except Exception:  # a report without its summary: written after the checks
        staged = None
    if staged is not None and refs is not None:
        refs += [st.stage_ref(n, staged[1].oid) for n in (step_ref(run, step), latest_ref(run))]

    checked: list[tuple[ShardSummary, CheckpointShard]] = []

    def check() -> None:
        checked.extend(
            own
            if i == 0 and own is not None and own[0].manifest == r["shard"]
            else _check_shard(st, r["shard"], run, step, i, world)
            for i, r in enumerate(reports)
        )

    jobs: list[Callable[[], None]] = [check, *([staged[1].sync] if staged else [])]
    try:
        # The folders on the chunk writer's threads (``write.fsync_dirs``, the one way a
        # save fsyncs folders), the check and the record's fsync on this thread and a helper.
        fsync_dirs(sorted(fans | above), lambda: _run_all(jobs))
    except BaseException:
        if staged is not None:
            staged[1].discard()
        raise
    return staged, checked


def _run_all(jobs: list[Callable[[], None]]) -> None:
    """Every job of ``jobs`` at once: on this thread and helpers (``map_threads``)."""
    map_threads(lambda job: job(), jobs, len(jobs))


def _record(run: str, step: int, world: int, shards: list[ShardSummary], note: str) -> Checkpoint:
    return Checkpoint(
        run_id=run,
        step=step,
        world_size=world,
        shards=shards,
        created=datetime.now(UTC),
        bytes_total=sum(s.bytes_total for s in shards),
        bytes_new=sum(s.bytes_new for s in shards),
        note=note,
    )


def _layout_gap(recs: list[CheckpointShard]) -> str | None:
    """Why the ranks' pieces of some sharded tensor do not make it whole, or None.

    Every rank must hold a piece (its DTensor) of every sharded key, with the same whole shape
    and dtype; the distinct pieces must fill the whole tensor (replicas hold the same box).
    """
    pieces: dict[str, list[tuple[int, TensorEntry]]] = {}
    for rec in recs:
        for e in rec.tensors:
            if e.layout is not None:
                pieces.setdefault(e.key, []).append((rec.rank, e))
    for key, got in pieces.items():
        if len(got) != len(recs):
            return f"tensor {key} is a DTensor on ranks {[r for r, _ in got]} only"
        kinds = {(tuple(e.layout.shape), e.dtype) for _, e in got if e.layout is not None}
        if len(kinds) != 1:
            return f"tensor {key}: the ranks disagree on its shape or dtype: {sorted(kinds)}"
        boxes = {(tuple(e.layout.offset), tuple(e.shape)) for _, e in got if e.layout is not None}
        whole = math.prod(next(iter(kinds))[0])
        if sum(math.prod(shape) for _, shape in boxes) != whole:
            return f"tensor {key}: the ranks' pieces do not make up its {whole} elements"
    return None


def _retain(st: Store, run: str, step: int, keep_last: int) -> None:
    """Drop step refs beyond the newest ``keep_last`` (by step); never the one just saved."""
    older = [(s, oid) for s, oid in list_steps(st, run) if s != step]
    for s, _oid in older[: max(0, len(older) - (keep_last - 1))]:
        fault("mid-retention")
        st.delete_ref(step_ref(run, s), reason="retention", keep_last=keep_last)
