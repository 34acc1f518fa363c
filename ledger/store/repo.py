"""A ledger on disk: config, objects, refs, log and the write lock. Imports nothing above it.

Layout (docs/format.md)::

    .ledger/
      config.json        format name, version, ledger id, creation time
      objects/b3/ab/…    content-addressed objects (fan-out on the first two hex digits)
      refs/…             named refs, one object id per file
      log/chain.jsonl    hash-chained history of every ref change
      index.sqlite       derived cache (ledger.index); rebuildable, never the truth
      tmp/               temp files of writes in progress; safe to delete when idle
      locks/             advisory lock files
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._canonical import canonical_json, format_datetime, parse_json
from .._hashing import OID_RE
from ..errors import (
    FormatVersionError,
    LedgerAccessError,
    LedgerError,
    LedgerNotFoundError,
    UsageError,
)
from .atomic import atomic_write_bytes, fsync_dir, stage_bytes
from .fold import ABSENT, Fold, RefState, fold_log, judge, kind_of
from .log import HashLog, LogEntry
from .objects import ObjectStore
from .pool import KeptPool
from .refs import RefStore, check_ref_name
from .safe_read import NotRegularError, read_regular

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "RefRepair", "Store", "find_ledger_dir"]

FORMAT_NAME = "ledger"
# 2: object files may use codec 0x02 (raw content from offset 4096, docs/format.md). A
# version 1 ledger is read as it is, and raised to 2 before this code writes to it.
FORMAT_VERSION = 2
DIRNAME = ".ledger"
ENV_VAR = "LEDGER_DIR"
# The fields of a ref change's log line that the change itself sets (a note may not).
# config.json holds a few names and remotes; a larger one is damage, never read whole.
MAX_CONFIG = 1 << 20
_ENTRY_FIELDS = frozenset({"seq", "prev", "op", "ref", "old", "new", "time"})
# How many of the log's last lines a writer reads to finish the ref writes of a writer killed
# between its log append and its ref files (at most one batch: a checkpoint's two lines).
_HEAL_LINES = 16


@dataclass
class RefRepair:
    """What ``Store.repair_refs`` did: ref files set or removed as the log says, and those it
    cannot repair (no accepted line made them, or the log's object is missing)."""

    repaired: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)


def _git_toplevel(start: Path) -> Path | None:
    for d in [start, *start.parents]:
        if (d / ".git").exists():
            return d
    return None


def find_ledger_dir(explicit: str | Path | None = None, *, for_init: bool = False) -> Path:
    """Where the ledger is: ``explicit``, else ``$LEDGER_DIR``, else the nearest ``.ledger``
    above the current directory, else (for init) ``.ledger`` at the git root or here."""
    if explicit is None:
        explicit = os.environ.get(ENV_VAR) or None
    if explicit is not None:
        return Path(explicit).expanduser().absolute()
    cwd = Path.cwd()
    for d in [cwd, *cwd.parents]:
        if os.path.lexists(d / DIRNAME / "config.json"):  # any file: ``open`` checks it
            return d / DIRNAME
    if for_init:
        return (_git_toplevel(cwd) or cwd) / DIRNAME
    raise LedgerNotFoundError(
        f"no {DIRNAME} ledger in {cwd} or any parent directory",
        hint=f"run `ledger init` here, or point {ENV_VAR} / --ledger at an existing ledger",
    )


class Store:
    """Objects, refs and log of one ledger. Use ``Store.init`` or ``Store.open``."""

    def __init__(self, root: Path, config: dict[str, Any]) -> None:
        self.root = root
        self.config = config
        self.tmp_dir = root / "tmp"
        self.objects = ObjectStore(root / "objects", self.tmp_dir, self._raise_version)
        self.refs = RefStore(root / "refs")
        self.log = HashLog(root / "log" / "chain.jsonl")

    @property
    def id(self) -> str:
        return str(self.config["id"])

    def _raise_version(self) -> None:
        """Before this code writes its first object here: a ledger of an older format version
        (1: before object files of codec 0x02) is marked with this one, so that an older
        ledger refuses it by its version rather than call the new objects corrupt. Written
        like init's config (atomic, durable); two writers racing write the same bytes. A
        ledger this process cannot write keeps its version: nothing is written to it."""
        version = self.config.get("version")
        if not isinstance(version, int) or version >= FORMAT_VERSION:
            return
        config = {**self.config, "version": FORMAT_VERSION}
        try:
            atomic_write_bytes(
                self.root / "config.json", canonical_json(config) + b"\n", self.tmp_dir
            )
        except OSError as e:
            raise LedgerAccessError(
                f"cannot write {self.root / 'config.json'} (raising the ledger's format "
                f"version from {version} to {FORMAT_VERSION} before writing to it): {e.strerror}",
                hint="check the ledger's permissions",
            ) from None
        self.config = config

    # -- lifecycle -------------------------------------------------------------------------------
    @classmethod
    def init(cls, root: str | Path) -> Store:
        root = Path(root).absolute()
        if (root / "config.json").is_file():
            return cls.open(root)
        try:
            root.mkdir(parents=True, exist_ok=True)
            for sub in ("objects", "refs", "log", "tmp", "locks"):
                (root / sub).mkdir(exist_ok=True)
            config = {
                "format": FORMAT_NAME,
                "version": FORMAT_VERSION,
                "id": str(uuid.uuid4()),
                "created": format_datetime(datetime.now(UTC)),
                "hash": "blake3-256",
            }
            # config.json is written last: a ledger without it is an unfinished init.
            atomic_write_bytes(root / "config.json", canonical_json(config) + b"\n", root / "tmp")
            fsync_dir(root)
        except OSError as e:
            raise LedgerAccessError(
                f"cannot create a ledger at {root}: {e.strerror}",
                hint="choose a writable directory with --ledger or LEDGER_DIR",
            ) from None
        return cls(root, config)

    @classmethod
    def open(cls, root: str | Path | None = None) -> Store:
        root = find_ledger_dir(root)
        cfg_path = root / "config.json"
        if not os.path.lexists(cfg_path):
            raise LedgerNotFoundError(
                f"{root} is not a ledger (no config.json)",
                hint="run `ledger init`, or point --ledger / LEDGER_DIR at an existing ledger",
            )
        try:
            config = parse_json(read_regular(cfg_path, MAX_CONFIG))
        except PermissionError:
            raise LedgerAccessError(
                f"cannot read {cfg_path}", hint="check the file permissions"
            ) from None
        except ValueError as e:
            raise LedgerAccessError(
                f"{cfg_path} is not valid JSON: {e}", hint="restore it from a backup or remote"
            ) from None
        if not isinstance(config, dict) or config.get("format") != FORMAT_NAME:
            raise LedgerAccessError(f"{cfg_path} does not describe a ledger")
        version = config.get("version")
        if not isinstance(version, int) or version > FORMAT_VERSION:
            raise FormatVersionError(
                f"{root} uses ledger format version {version}; this ledger reads up to "
                f"{FORMAT_VERSION}",
                hint="upgrade ledger (pip install -U ledger-repro) to read it",
            )
        return cls(root, config)

    def check_writable(self) -> None:
        for sub in ("objects", "tmp", "refs", "log"):
            if not os.access(self.root / sub, os.W_OK):
                raise LedgerAccessError(
                    f"the ledger at {self.root} is not writable ({sub}/)",
                    hint="fix its permissions, or record into another ledger with --ledger",
                )

    # -- locking -----------------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self, name: str = "refs") -> Iterator[None]:
        """An exclusive advisory lock shared by every process using this ledger."""
        path = self.root / "locks" / f"{name}.lock"
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(path, flags, 0o644)
        except OSError as e:
            if e.errno not in (errno.ELOOP, errno.ENXIO):
                raise
            raise NotRegularError(
                f"{path} is a symbolic link or a socket, not a lock file; it was not opened",
                hint="remove it: ledger creates its lock files itself",
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    # -- records (JSON objects) --------------------------------------------------------------------
    def put_json(self, value: Any) -> str:
        return self.objects.put_bytes(canonical_json(value))

    def get_json(self, oid: str) -> Any:
        data = self.objects.get_bytes(oid)
        try:
            return parse_json(data)
        except (ValueError, UnicodeDecodeError) as e:
            from ..errors import CorruptObjectError

            raise CorruptObjectError(oid, f"object {oid} is not a JSON record: {e}") from None

    # -- refs + log --------------------------------------------------------------------------------
    def set_ref(self, name: str, oid: str, *, op: str = "set", **note: Any) -> LogEntry:
        """Point ``name`` at ``oid``: log entry first (the commit point), then the ref file.
        A move the format does not allow (``ledger.store.fold``) is refused with UsageError
        before anything is written."""
        check_ref_name(name)
        if not self.objects.has(oid):
            raise UsageError(f"cannot point ref {name} at {oid}: no such object")
        with self.lock():
            self._finish_cut_writes()
            old = self.refs.get(name)
            self._allowed(self._state_of(name, old), name, op, oid)
            entry = self.log.append(
                op=op, ref=name, old=old, new=oid, time=format_datetime(datetime.now(UTC)), **note
            )
            path = self.refs.path_of(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, oid.encode() + b"\n", self.tmp_dir)
        return entry

    def set_refs(
        self,
        moves: Sequence[tuple[str, str, str, dict[str, Any]]],
        after_each: Callable[[str], None] = lambda name: None,
        after_log: Callable[[], None] = lambda: None,
        staged: Sequence[StagedRef] = (),
        before_append: Callable[[], None] | None = None,
    ) -> list[LogEntry]:
        """Point each ref at its object, ``moves`` being (name, oid, op, note): like
        ``set_ref`` on each in turn, with fewer fsyncs. Their log entries are appended
        together (one fsync, the commit point of all; each ref file's temp copy is written and
        fsynced meanwhile), then each ref file is replaced in order (``after_each(name)`` once
        it is; ``after_log()`` before the first), then each directory that changed is fsynced
        once.
        A ref named twice is logged as moved twice, the second move from the first's object.
        ``staged``: temp copies the caller made earlier (``stage_ref``), used for the moves
        they match (same ref, same object) instead of writing them during the append; all of
        them are removed or renamed into place by the time this returns or raises.
        ``before_append`` runs under the lock right before the append: a writer whose objects'
        names are still being made durable on other threads waits for them there, while the
        lock and what the append needs were taken (nothing is written if it raises)."""
        spare = list(staged)  # the caller's copies not yet matched with a move
        used: list[StagedRef] = []
        try:
            for name, oid, _op, note in moves:
                check_ref_name(name)
                if not self.objects.has(oid):
                    raise UsageError(f"cannot point ref {name} at {oid}: no such object")
                if own := sorted(_ENTRY_FIELDS & note.keys()):
                    raise UsageError(
                        f"cannot move ref {name}: its note sets {', '.join(own)}, which the "
                        "log entry sets itself"
                    )
            with self.lock():
                self._finish_cut_writes()
                now = format_datetime(datetime.now(UTC))
                held: dict[str, RefState | None] = {}  # each ref once the moves before are made
                lines: list[dict[str, Any]] = []
                for name, oid, op, note in moves:
                    state = (
                        held[name] if name in held else self._state_of(name, self.refs.get(name))
                    )
                    after = self._allowed(state, name, op, oid)
                    old = None if state is None else state.oid
                    lines.append(
                        {**note, "op": op, "ref": name, "old": old, "new": oid, "time": now}
                    )
                    held[name] = RefState(oid, after)
                # Each ref file's new content is known before the commit point: its temp file
                # is written and fsynced on a kept thread (``_aside_pool``) while the log append
                # is fsynced (a crash before the append leaves temp files only), unless the
                # caller staged it earlier (``stage_ref``); after the append, the files are
                # renamed into place in order. Three fsyncs in a row became two.
                for name, oid, *_ in moves:
                    path = self.refs.path_of(name)
                    used.append(_matching(spare, path, oid) or StagedRef(path, oid, self.tmp_dir))
                if before_append is not None:
                    before_append()
                return self._append_and_move(moves, used, after_each, after_log, lines)
        finally:
            for ref in [*spare, *used]:
                ref.discard()

    def stage_ref(self, name: str, oid: str) -> StagedRef:
        """The temp copy of ref ``name``'s file pointing at ``oid``, written and fsynced on a
        kept thread from now on, for a later ``set_refs(..., staged=[...])`` of the same move:
        a writer that knows the object a ref will hold before the object is durable (a
        checkpoint's record, staged beside its manifest) takes that fsync off the way from
        the log append to the ref files. Nothing is moved: a copy ``set_refs`` does not use is
        removed by it, and one never passed to it must be ``discard``-ed."""
        check_ref_name(name)
        return StagedRef(self.refs.path_of(name), oid, self.tmp_dir)

    def _append_and_move(
        self,
        moves: Sequence[tuple[str, str, str, dict[str, Any]]],
        staged: list[StagedRef],
        after_each: Callable[[str], None],
        after_log: Callable[[], None],
        lines: list[dict[str, Any]],
    ) -> list[LogEntry]:
        """``set_refs``' writes under the lock: the log append, the renames, the fsyncs."""
        entries = self.log.append_many(lines)
        for ref in staged:
            ref.wait()
        after_log()
        dirs: list[Path] = []
        for (name, *_), ref in zip(moves, staged, strict=True):
            ref.commit()
            after_each(name)
            if ref.path.parent not in dirs:
                dirs.append(ref.path.parent)
        for d in dirs:
            fsync_dir(d)
        return entries

    def create_ref(self, name: str, oid: str, *, op: str, **note: Any) -> str | None:
        """Point ``name`` at ``oid`` only if it points nowhere yet (checked under the lock).
        Returns None when set, else what ``name`` already holds (nothing is changed)."""
        check_ref_name(name)
        if not self.objects.has(oid):
            raise UsageError(f"cannot point ref {name} at {oid}: no such object")
        with self.lock():
            self._finish_cut_writes()
            old = self.refs.get(name)
            if old is not None:
                return old
            self._allowed(None, name, op, oid)
            self.log.append(
                op=op, ref=name, old=None, new=oid, time=format_datetime(datetime.now(UTC)), **note
            )
            path = self.refs.path_of(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, oid.encode() + b"\n", self.tmp_dir)
        return None

    def delete_ref(self, name: str, **note: Any) -> LogEntry | None:
        with self.lock():
            self._finish_cut_writes()
            old = self.refs.get(name)
            if old is None:
                return None
            self._allowed(self._state_of(name, old), name, "delete", None)
            entry = self.log.append(
                op="delete",
                ref=name,
                old=old,
                new=None,
                time=format_datetime(datetime.now(UTC)),
                **note,
            )
            path = self.refs.path_of(name)
            path.unlink()
            fsync_dir(path.parent)
        return entry

    @staticmethod
    def _allowed(held: RefState | None, name: str, op: str, oid: str | None) -> str:
        """The ref's state after the move, or UsageError when the table
        (``ledger.store.fold.KINDS``) forbids it: a writer never logs a line the fold refuses."""
        line = {"op": op, "ref": name, "old": None if held is None else held.oid, "new": oid}
        problem, after = judge(held, line)
        if problem is not None or after is None:
            raise UsageError(
                f"cannot move ref {name} with op {op!r}: {problem}; nothing was written",
                hint='docs/format.md, "Transitions", lists the moves each ref kind allows',
            )
        return after

    def _write_ref(self, name: str, oid: str | None) -> None:
        path = self.refs.path_of(name)
        if oid is None:
            path.unlink(missing_ok=True)
            fsync_dir(path.parent)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, oid.encode() + b"\n", self.tmp_dir)

    def _state_of(self, name: str, oid: str | None) -> RefState | None:
        """A ref's state in the fold, told from its file alone (a run by its record's status)."""
        if oid is None:
            return None
        kind = kind_of(name).name
        if kind == "curation":  # a retraction stays: its records say so
            try:
                rec = self.get_json(oid)
            except LedgerError:
                return RefState(oid, "set")
            retracted = isinstance(rec, dict) and rec.get("retracted") is True
            return RefState(oid, "retracted" if retracted else "set")
        if kind != "run":
            return RefState(oid, "set")
        try:
            rec = self.get_json(oid)
        except LedgerError:
            return RefState(oid, "sealed")
        running = isinstance(rec, dict) and rec.get("status") == "running"
        return RefState(oid, "running" if running else "sealed")

    def _finish_cut_writes(self) -> None:
        """Under the lock, before a write: the ref files the log's last lines set, which a
        writer killed after its log append (the commit point) did not write, are written now,
        so that the new line's ``old`` is what the log says. Only a move the fold allows from
        what the file holds is finished; ``repair_refs`` repairs the rest from the whole log."""
        by_ref: dict[str, list[dict[str, Any]]] = {}
        for entry in self.log.tail(_HEAL_LINES):
            ref = entry.data.get("ref")
            if isinstance(ref, str):
                by_ref.setdefault(ref, []).append(entry.data)
        for name, lines in by_ref.items():
            try:
                have = self.refs.get(name)
            except LedgerError:
                continue  # a damaged ref file: verify reports it
            if lines[-1].get("new") == have:
                continue
            state, moved = self._state_of(name, have), False
            for d in lines:
                if d.get("old") != (None if state is None else state.oid):
                    continue
                _, after = judge(state, d)
                if after is None:
                    continue  # refused: the fold applies nothing and goes on to the next line
                new = d.get("new")
                state = None if after == ABSENT else RefState(str(new), after)
                moved = True
            if moved:
                self._write_ref(name, None if state is None else state.oid)

    def repair_refs(
        self, fold: Fold | None = None, last: tuple[int, str] | None = None
    ) -> RefRepair:
        """Make every ref file hold what the fold of the whole log says (the log is the commit
        point; a crash between a log append and its ref write leaves the file behind). A ref
        file no accepted line ever changed, or whose logged object is missing, is left as it
        is and listed in ``left``. ``fold``: the fold of the log's lines up to the one that
        starts at byte ``last[0]`` and hashes to ``last[1]`` (None: no line), taken earlier by
        the caller (``ledger reindex`` folds the log for the index): the lines after it are
        folded into it here, under the lock, so it is the whole log's when the files are
        compared with it. It is folded again from the start if that line is not there."""
        out = RefRepair()
        with self.lock():
            fold = self.fold() if fold is None else self._fold_rest(fold, last)
            want = fold.values()
            have: dict[str, str | None] = {}
            # Each ref read once. A file whose name no ref may have is never in ``want`` (the
            # fold refuses such lines) nor in ``touched``: it is left, whatever it holds.
            for name, text in self.refs.iter():
                have[name] = text if OID_RE.match(text) else None
            for name in sorted(set(want) | set(have)):
                target = want.get(name)
                if target == have.get(name) and (target is not None or name not in have):
                    continue
                if (target is None and name not in fold.touched) or (
                    target is not None and not self.objects.has(target)
                ):
                    out.left.append(name)
                    continue
                self._write_ref(name, target)
                out.repaired.append(name)
        return out

    def fold(self) -> Fold:
        """The log folded into refs, refusing the moves the format does not allow
        (``ledger.store.fold``)."""
        return fold_log(self.log.entries())

    def _fold_rest(self, fold: Fold, last: tuple[int, str] | None) -> Fold:
        """``fold`` (of the lines up to ``last``: its offset and hash) with the lines after it
        applied; the whole log folded anew when ``last`` is not a line of it any more."""
        lines = self.log.entries_from(0 if last is None else last[0])
        if last is not None:
            first = next(lines, None)
            if first is None or first[1].hash != last[1]:
                return self.fold()  # cut or rewritten since: not the log ``fold`` was taken of
        for _, entry in lines:
            fold.apply(entry.data)
        return fold

    def ref_state_from_log(self) -> dict[str, str]:
        """What every ref should hold according to the log (its accepted lines)."""
        return self.fold().values()


# Threads that write ref files' temp copies while ``set_refs`` fsyncs the log, kept between
# calls: starting two per checkpoint publish cost a wake-up each on a busy machine.
_ASIDE = 4
_aside_pool = KeptPool(_ASIDE, "ledger-store-aside")


def _matching(spare: list[StagedRef], path: Path, oid: str) -> StagedRef | None:
    """The first of ``spare`` that is a copy of ``path`` holding ``oid``, taken out of it."""
    for i, ref in enumerate(spare):
        if ref.path == path and ref.oid == oid:
            return spare.pop(i)
    return None


class StagedRef:
    """A ref file's new content in a temp file, written and fsynced at once on a thread of
    the kept pool (``_aside_pool``); ``commit`` renames it into place (``replace_bytes`` in
    two halves). Made by ``Store.stage_ref`` or by ``set_refs`` itself."""

    def __init__(self, path: Path, oid: str, tmp_dir: Path) -> None:
        self.path, self.oid = path, oid
        self._tmp: Path | None = None
        self._error: BaseException | None = None
        self._done = threading.Event()
        data = oid.encode() + b"\n"
        _aside_pool().submit(lambda: self._write(data, tmp_dir))

    def _write(self, data: bytes, tmp_dir: Path) -> None:
        try:
            self._tmp = stage_bytes(data, tmp_dir)
        except BaseException as e:  # raised by ``wait``
            self._error = e
        finally:
            self._done.set()

    def wait(self) -> None:
        self._done.wait()
        if self._error is not None:
            raise self._error

    def commit(self) -> None:
        if self._tmp is None:
            raise RuntimeError("a staged ref is committed after wait() only")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        os.replace(self._tmp, self.path)
        self._tmp = None

    def discard(self) -> None:
        """Remove the temp file if it was not renamed (an error before, or in, the commit)."""
        self._done.wait()
        if self._tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                self._tmp.unlink()
