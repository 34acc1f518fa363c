"""``ledger push`` / ``pull``: send or fetch only the objects the other side lacks (a set
difference of content ids), every object hashed on arrival before it becomes visible, in
parallel; refs last, so neither side ever holds a ref to a missing object."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from .._canonical import parse_json
from .._hashing import ALGO_PREFIX, CHUNK, hash_bytes, new_hasher
from .._progress import stage
from ..errors import CorruptObjectError, UsageError
from ..index.short_ids import match_short_id
from ..records.base import record_from_json
from ..records.run import Run
from ..store import Store
from ..store.anchor import chain_head
from ..store.walk import links_of
from .closure import commit_of_run, run_closure
from .refs_in import RefsReport, import_refs
from .remote import Remote

__all__ = ["PullReport", "PushReport", "pull", "push"]

WORKERS = 8
# An upload left in the remote's tmp/ by a push that was killed is removed by a later push
# once it is this old; younger ones may belong to a teammate's push still running.
STALE_UPLOAD_S = 24 * 3600


@dataclass
class PushReport:
    runs: list[str]
    objects: int
    sent: int
    bytes_sent: int
    refs: int


@dataclass
class PullReport:
    origins: list[str]
    fetched: int
    bytes_fetched: int
    refs: RefsReport = field(default_factory=RefsReport)
    incomplete: list[str] = field(default_factory=list)  # refs whose object the remote lacks


def _send(store: Store, remote: Remote, oid: str) -> int:
    tmp = remote.tmp_path()
    hasher, n = new_hasher(), 0
    with remote.reaching():
        dst = remote.fs.open(tmp, "wb")
    with store.objects.open(oid) as src:
        while chunk := src.read(CHUNK):
            hasher.update(chunk)
            with remote.reaching():
                dst.write(chunk)
            n += len(chunk)
    with remote.reaching():
        dst.close()  # an S3 upload completes here
    if ALGO_PREFIX + hasher.hexdigest() != oid:
        with contextlib.suppress(OSError):
            remote.fs.rm(tmp)
        raise CorruptObjectError(
            oid,
            f"object {oid} is corrupt here; it was not pushed",
            hint="run `ledger verify`; restore it from another copy",
        )
    final = remote.object_path(oid)
    with remote.reaching():
        remote.fs.makedirs(final.rsplit("/", 1)[0], exist_ok=True)
        remote.fs.mv(tmp, final)
    return n


def push(store: Store, remote: Remote, runs: list[str] | None = None) -> PushReport:
    """Send ``runs`` (default: every run) and all they need; then this ledger's refs file."""
    remote.check(create=True)
    wanted = runs or [name.split("/", 1)[1] for name, _ in store.refs.iter("runs/")]
    closure = run_closure(store, wanted)
    missing = sorted(closure.objects - remote.objects())
    sent = 0
    remote.sweep_tmp(STALE_UPLOAD_S)
    with stage("pushing objects", len(missing)) as ticker, ThreadPoolExecutor(WORKERS) as pool:
        for n in pool.map(lambda oid: _send(store, remote, oid), missing):
            sent += n
            ticker(1, n)
    mine = remote.origins().get(store.id, {}).get("refs", {})
    head, _ = chain_head(store.log)
    remote.write_origin(
        store.id, {"ledger": store.id, "head": head, "refs": {**mine, **closure.refs}}
    )
    return PushReport(closure.runs, len(closure.objects), len(missing), sent, len(closure.refs))


class _RemoteReader(io.RawIOBase):
    """A remote file read through ``remote.reaching`` (its failures become one clear error)."""

    def __init__(self, remote: Remote, src: BinaryIO) -> None:
        self._remote, self._src, self.n = remote, src, 0

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        with self._remote.reaching():
            chunk = self._src.read(-1 if size is None else size)
        self.n += len(chunk)
        return bytes(chunk)


def _fetch(store: Store, remote: Remote, oid: str) -> int:
    """Stream ``oid`` from the remote into the object store, hashed as it is written and
    published only when its hash is its name. Raises CorruptObjectError otherwise."""
    with remote.reaching():
        src = remote.fs.open(remote.object_path(oid), "rb")
    with src:
        reader = _RemoteReader(remote, src)
        try:
            store.objects.put_stream(reader, expect=oid)  # type: ignore[arg-type]
        except CorruptObjectError as e:
            raise CorruptObjectError(
                oid,
                f"object {oid} on remote {remote.url} is corrupt: {e.message}",
                hint="push it again from a ledger that holds it intact",
            ) from None
    return reader.n


def _select(refs: dict[str, str], runs: list[str] | None, sources: bool) -> dict[str, str]:
    """The refs of ``runs`` (every ref when None) and the replay runs their verdicts name;
    ``sources/`` refs only when ``sources`` (a selection takes only the commits its runs need)."""
    if runs is None:
        return dict(refs)
    keep = set(runs)
    for name in refs:
        parts = name.split("/")
        if parts[0] == "verdicts" and len(parts) == 3 and parts[1] in keep:
            keep.add(parts[2])  # the replay runs a verdict names
    out = {}
    for name, oid in refs.items():
        parts = name.split("/")
        if (sources and parts[0] == "sources") or (
            parts[0] != "sources" and len(parts) > 1 and parts[1] in keep
        ):
            out[name] = oid
    return out


def _resolve_remote_runs(
    store: Store, remote: Remote, origins: dict[str, dict[str, Any]], texts: list[str]
) -> list[str]:
    """Run ids on the remote for ``texts``, read as every command reads a run: a full id, a
    unique prefix, a short id (as ``ledger ls`` prints it), or a run name (its latest original
    run; a replay only when every run of that name is one)."""
    refs = {n: o for data in origins.values() for n, o in data["refs"].items()}
    ids = sorted(n.split("/", 1)[1] for n in refs if n.startswith("runs/"))
    names: dict[str, list[tuple[bool, str]]] | None = None
    out = []
    for text in texts:
        if text in ids:
            out.append(text)
            continue
        found = [i for i in ids if i.startswith(text)] if text else []
        if not found:
            found = match_short_id(ids, text)
        if not found and text:
            if names is None:
                names = _remote_names(store, remote, refs, ids)
            named = names.get(text, [])  # originals first, each kind latest first
            found = [named[0][1]] if named else []
        if not found:
            raise UsageError(
                f"no run {text} on the remote; nothing was fetched",
                hint="give a run id, a unique prefix, a short id or a run name; "
                "`ledger pull REMOTE` without runs fetches every run it holds",
            )
        if len(found) > 1:
            shown = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
            raise UsageError(
                f"run prefix {text} is ambiguous on the remote: {shown}; nothing was fetched",
                hint="give more characters of the run id",
            )
        out.append(found[0])
    return out


def _remote_names(
    store: Store, remote: Remote, refs: dict[str, str], ids: list[str]
) -> dict[str, list[tuple[bool, str]]]:
    """``{run name: [(is a replay, run id)]}`` from the remote's run records, latest first.

    The records are read into memory (and hashed), not stored: a pull that then fails, or takes
    other runs, leaves nothing behind."""
    out: dict[str, list[tuple[bool, str]]] = {}
    for run_id in reversed(ids):  # ids sort by start time: latest first
        oid = refs[f"runs/{run_id}"]
        data = store.get_json(oid) if store.objects.has(oid) else _remote_json(remote, oid)
        run = record_from_json(data, Run)
        if run.name:
            out.setdefault(run.name, []).append((run.replay_of is not None, run_id))
    for runs in out.values():
        runs.sort(key=lambda r: r[0])  # stable: originals (latest first), then replays
    return out


_MAX_RECORD = 16 << 20


def _remote_json(remote: Remote, oid: str) -> Any:
    """A JSON record on the remote (which holds objects' content as is), read into memory and
    checked against its id."""
    with remote.reaching(), remote.fs.open(remote.object_path(oid), "rb") as f:
        data = f.read(_MAX_RECORD + 1)
    try:
        if len(data) > _MAX_RECORD or hash_bytes(data) != oid:
            raise ValueError("its content does not hash to its id")
        return parse_json(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise CorruptObjectError(
            oid,
            f"object {oid} on remote {remote.url} is corrupt: {e}",
            hint="push it again from a ledger that holds it intact",
        ) from None


def _fetch_closure(
    store: Store,
    remote: Remote,
    pool: ThreadPoolExecutor,
    frontier: set[str],
    have_remote: set[str],
    report: PullReport,
    ticker: Callable[[int, int], None],
) -> None:
    """Fetch ``frontier`` and every object it links to that this ledger lacks, round by round."""
    seen: set[str] = set()
    while frontier:
        seen |= frontier
        todo = sorted(o for o in frontier if not store.objects.has(o) and o in have_remote)
        for n in pool.map(lambda oid: _fetch(store, remote, oid), todo):
            report.fetched += 1
            report.bytes_fetched += n
            ticker(1, n)
        nxt: set[str] = set()
        for oid in frontier:
            if store.objects.has(oid):
                nxt |= {c for c, _ in links_of(store.objects, oid)}
        frontier = nxt - seen


def pull(store: Store, remote: Remote, runs: list[str] | None = None) -> PullReport:
    """Fetch the runs of every ledger that pushed to ``remote`` (or only ``runs``: ids or
    unique prefixes, with the replays their verdicts name and the commits their code needs),
    walking links as gc does; then add the refs each origin pushed under ``import`` log lines."""
    remote.check(create=False)
    origins = remote.origins()
    if runs is not None:
        runs = _resolve_remote_runs(store, remote, origins, runs)
    have_remote = remote.objects()
    report = PullReport(sorted(origins), 0, 0)
    chosen = {o: _select(data["refs"], runs, runs is None) for o, data in origins.items()}
    with stage("pulling objects") as ticker, ThreadPoolExecutor(WORKERS) as pool:
        frontier = {o for refs in chosen.values() for o in refs.values()}
        _fetch_closure(store, remote, pool, frontier, have_remote, report, ticker)
        if runs is not None:
            # The carried commits of the runs chosen (and of the replays their verdicts name).
            for origin, refs in chosen.items():
                commits = {
                    commit_of_run(store, oid)
                    for name, oid in refs.items()
                    if name.startswith("runs/") and store.objects.has(oid)
                }
                for name, oid in origins[origin]["refs"].items():
                    if name.startswith("sources/git/") and name.rsplit("/", 1)[1] in commits:
                        refs[name] = oid
            frontier = {
                o for refs in chosen.values() for n, o in refs.items() if n.startswith("sources/")
            }
            _fetch_closure(store, remote, pool, frontier, have_remote, report, ticker)
    for origin, refs in sorted(chosen.items()):
        present = {n: o for n, o in refs.items() if store.objects.has(o)}
        report.incomplete += sorted(set(refs) - set(present))
        got = import_refs(
            store, present, origin={"ledger": origin, "head": origins[origin].get("head")}
        )
        report.refs.added += got.added
        report.refs.present += got.present
        report.refs.collisions += got.collisions
    return report
