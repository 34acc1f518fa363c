"""``ledger push`` / ``pull``: send or fetch only the objects the other side lacks (a set
difference of content ids), every object hashed on arrival before it becomes visible, in
parallel; refs last, so neither side ever holds a ref to a missing object."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._canonical import parse_json
from .._hashing import ALGO_PREFIX, CHUNK, hash_bytes, new_hasher
from .._progress import stage
from ..errors import CorruptObjectError, MissingObjectError, UsageError
from ..index.short_ids import match_short_id
from ..records.base import record_from_json
from ..records.run import Run
from ..store import Store
from ..store.anchor import chain_head
from ..store.incoming import Fetched, Incoming
from ..store.made import note_made
from ..store.safe_read import NotRegularError
from ..store.walk import MAX_RECORD, as_record, links_in, links_of, may_be_record
from .closure import commit_of_run, run_closure
from .door import RefsReport, admit, entry_lease, from_origin
from .path_fs import PathFS
from .remote import Remote

__all__ = ["PullReport", "PushReport", "pull", "push"]

WORKERS = 8
# An upload left in the remote's tmp/ by a push that was killed is removed by a later push
# once it is this old; younger ones may belong to a teammate's push still running.
STALE_UPLOAD_S = 24 * 3600
# Objects up to this size go to S3 whole, in one PUT (s3fs buffers as much before it starts a
# multipart upload); at most WORKERS of them are in memory at once.
WHOLE_UPLOAD = 50 << 20


@dataclass
class PushReport:
    runs: list[str]
    objects: int
    sent: int
    bytes_sent: int
    refs: int
    replaced: int = 0  # objects the remote held damaged (wrong size or hash), sent again


@dataclass
class PullReport:
    origins: list[str]
    fetched: int
    bytes_fetched: int
    refs: RefsReport = field(default_factory=RefsReport)
    notes: list[str] = field(default_factory=list)  # e.g. what a clone cleaned up first


def _send(store: Store, remote: Remote, oid: str) -> int:
    """Upload ``oid``, hashed as it is read: it appears on the remote only if its bytes hash
    to its id (``Remote.writing``). To S3, an object up to ``WHOLE_UPLOAD`` bytes is read
    whole, hashed and sent with one PUT: what s3fs would buffer anyway, without copying it
    piece by piece into that buffer and out again."""
    if remote.uploads_commit and _content_size(store, oid) <= WHOLE_UPLOAD:
        with store.objects.open(oid) as src:
            data = src.read(WHOLE_UPLOAD + 1)
        if len(data) <= WHOLE_UPLOAD:
            if hash_bytes(data) != oid:
                raise _corrupt_here(oid)
            remote.put_whole(oid, data)
            return len(data)
    hasher, n = new_hasher(), 0
    with remote.writing(oid) as dst, store.objects.open(oid) as src:
        while chunk := src.read(CHUNK):
            hasher.update(chunk)
            with remote.reaching():
                dst.write(chunk)
            n += len(chunk)
        if ALGO_PREFIX + hasher.hexdigest() != oid:
            raise _corrupt_here(oid)
    return n


def _corrupt_here(oid: str) -> CorruptObjectError:
    return CorruptObjectError(
        oid,
        f"object {oid} is corrupt here; it was not pushed",
        hint="run `ledger verify`; restore it from another copy",
    )


def _content_size(store: Store, oid: str) -> int:
    """The size of ``oid``'s content (what a remote holds), mostly without reading it."""
    return store.objects.content_size(oid)


def _remote_hash(remote: Remote, oid: str, size: int) -> str:
    """The id of what the remote holds as ``oid``, reading at most ``size + 1`` bytes."""
    hasher, n = new_hasher(), 0
    with remote.reaching(), remote.fs.open(remote.object_path(oid), "rb") as f:
        while n <= size and (chunk := f.read(min(CHUNK, size + 1 - n))):
            hasher.update(chunk)
            n += len(chunk)
    return ALGO_PREFIX + hasher.hexdigest() if n == size else ""


def _damaged(store: Store, remote: Remote, oid: str, listed: int) -> bool:
    """Whether the remote's copy of ``oid`` is not its content: its listed size differs
    (every remote), or, on a path remote, its bytes do not hash to its id. An S3 remote's
    copy is not read back: a same-size corruption there is caught by the pull's hash."""
    size = _content_size(store, oid)
    if listed != size:
        return True
    if not isinstance(remote.fs, PathFS):
        return False
    try:
        return _remote_hash(remote, oid, size) != oid
    except NotRegularError:
        return True  # a FIFO or a file planted as the object: replaced by the real one


def push(store: Store, remote: Remote, runs: list[str] | None = None) -> PushReport:
    """Send ``runs`` (default: every run) and all they need; then this ledger's refs file.
    An object the remote already lists is checked first (``_damaged``) and sent again, over
    the remote's copy, when that copy is not its content."""
    remote.check(create=True)
    if isinstance(remote.fs, PathFS):  # a folder ledger fills: not the project's code
        note_made(store.root, Path(remote.root), "remote")
    wanted = runs or [name.split("/", 1)[1] for name, _ in store.refs.iter("runs/")]
    closure = run_closure(store, wanted)
    listed = remote.objects()
    present = sorted(closure.objects & listed.keys())
    with (
        stage("checking the remote's copies", len(present)) as ticker,
        ThreadPoolExecutor(WORKERS) as pool,
    ):
        damaged = set()
        for oid, bad in zip(
            present, pool.map(lambda o: _damaged(store, remote, o, listed[o]), present), strict=True
        ):
            if bad:
                damaged.add(oid)
            ticker(1, 0)
    missing = sorted((closure.objects - listed.keys()) | damaged)
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
    return PushReport(
        closure.runs, len(closure.objects), len(missing), sent, len(closure.refs), len(damaged)
    )


def _too_long(remote: Remote, oid: str, limit: int) -> CorruptObjectError:
    return CorruptObjectError(
        oid,
        f"object {oid} on remote {remote.url} holds more than the {limit} bytes expected; "
        "it was not stored",
        hint="push it again from a ledger that holds it intact",
    )


def _fetch(
    remote: Remote, incoming: Incoming, oid: str, listed: int, expected: int | None
) -> Fetched:
    """Stream ``oid`` from the remote into ``incoming``: read straight into the writer's
    buffer, hashed once as it is written, staged only when its hash is its name (named at
    ``Incoming.commit``). ``expected``: its size as the record linking it states, or ``-n``
    for "at most n" (a ref's record), or None: a remote copy listed with another size is
    refused before a byte is read, and no copy is read past its size (nor past its listed
    size: a file growing as it is read, or a server stating more). Raises
    CorruptObjectError."""
    limit = listed
    if expected is not None and (expected != listed if expected >= 0 else listed > -expected):
        said = f"{expected}" if expected >= 0 else f"at most {-expected} (a record)"
        # A FIFO, a device or a link planted as the object lists a size too (0, say): opening
        # it refuses it by name as what it is (NotRegularError), before "corrupt" is said.
        with remote.reaching():
            remote.fs.open(remote.object_path(oid), "rb").close()
        raise CorruptObjectError(
            oid,
            f"object {oid} on remote {remote.url} is corrupt: it holds {listed} bytes, where "
            f"{said} were expected; nothing was downloaded",
            hint="push it again from a ledger that holds it intact",
        )
    with remote.reaching(), remote.reading(oid) as reader:
        if reader.size is not None and reader.size > limit:
            raise _too_long(remote, oid, limit)
        writer = incoming.writer(oid)
        try:
            while True:
                room = writer.room()
                n = reader.readinto(room[: limit + 1 - writer.size])
                if not n:
                    break
                writer.wrote(n)
                if writer.size > limit:
                    raise _too_long(remote, oid, limit)
        except BaseException:
            writer.abort()
            raise
        try:
            return writer.finish()
        except CorruptObjectError as e:
            raise CorruptObjectError(
                oid,
                f"object {oid} on remote {remote.url} is corrupt: {e.message}",
                hint="push it again from a ledger that holds it intact",
            ) from None


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


def _sizes_named(value: Any) -> dict[str, int]:
    """``{id: size}`` for each id a record states the size of beside it (an entry with
    ``digest`` or ``oid`` and an integer ``size``: files of data manifests, trees, configs)."""
    out: dict[str, int] = {}
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            size = v.get("size") if v.get("type", "file") == "file" else None
            for key in ("digest", "oid"):
                link = v.get(key)
                if isinstance(link, str) and isinstance(size, int) and not isinstance(size, bool):
                    out[link] = size
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return out


def _stored_record(store: Store, oid: str) -> Any:
    """The JSON value of a stored object whose links were found (a record), or None."""
    if not may_be_record(store.objects, oid):
        return None
    try:
        return store.get_json(oid)
    except (CorruptObjectError, MissingObjectError):
        return None


# What one step of the walk found: (bytes fetched, links, ``{link: size}``, whether the links
# could not be read yet: a large object that starts like a record, read once it is named).
_Step = tuple[int, list[str], dict[str, int], bool]


def _follow(
    store: Store,
    remote: Remote,
    incoming: Incoming,
    oid: str,
    fetch: tuple[int, int | None] | None,
) -> _Step:
    """One step of a pull's walk, in a worker: fetch ``oid`` when ``fetch`` is given (its
    listed and expected sizes, ``_fetch``), then read its links and the sizes its record
    states for them: from the content fetched (it has no name until ``Incoming.commit``),
    or from the store for an object here."""
    if fetch is not None:
        got = _fetch(remote, incoming, oid, *fetch)
        value = as_record(got.content) if got.content is not None else None
        links = [c for c, _ in links_in(value)] if value is not None else []
        return got.size, links, (_sizes_named(value) if links else {}), got.later
    if not store.objects.has(oid):
        return 0, [], {}, False
    links = [c for c, _ in links_of(store.objects, oid)]
    return 0, links, (_sizes_named(_stored_record(store, oid)) if links else {}), False


def _fetch_closure(
    store: Store,
    remote: Remote,
    pool: ThreadPoolExecutor,
    frontier: set[str],
    have_remote: dict[str, int],
    report: PullReport,
    ticker: Callable[[int, int], None],
) -> None:
    """Fetch ``frontier`` (ref targets: records, at most ``MAX_RECORD`` bytes each) and every
    object it links to that this ledger lacks, each object no larger than the record linking
    it says (``_sizes_named``; the first record that names it decides). When it returns,
    every object fetched is durable under its name (``Incoming.commit``: one barrier for
    them all, not an fsync each); none is named before its content is durable.

    Pipelined: an object's links are followed as soon as it is fetched (or found here), by
    the pool's workers, not once every object at its depth is: a run's data starts arriving
    while another run's records are still on their way, and a slow object holds up only what
    it links to. The first failure stops the walk: nothing more is started, and it is raised;
    what was staged is dropped."""
    seen = set(frontier)
    expected: dict[str, int] = dict.fromkeys(frontier, -MAX_RECORD)  # refs name records
    running: dict[Future[_Step], tuple[str, bool]] = {}
    later: list[str] = []  # fetched, links to read once named

    with Incoming(store.objects) as incoming:

        def visit(oid: str) -> None:
            # Touched, not only looked at: gc keeps what a pull holding its lease relies on.
            fetch = oid in have_remote and not store.objects.touch(oid)
            size = (have_remote[oid], expected.get(oid)) if fetch else None
            running[pool.submit(_follow, store, remote, incoming, oid, size)] = (oid, fetch)

        for oid in sorted(frontier):
            visit(oid)
        try:
            while running or later:
                if not running:  # only named objects' links are left to read
                    incoming.commit()
                    for oid in later:
                        running[pool.submit(_follow, store, remote, incoming, oid, None)] = (
                            oid,
                            False,
                        )
                    later = []
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: running[f][0]):
                    oid, fetched = running.pop(future)
                    n, links, sizes, deferred = future.result()
                    if fetched:
                        report.fetched += 1
                        report.bytes_fetched += n
                        ticker(1, n)
                    if deferred:
                        later.append(oid)
                    fresh = sorted(set(links) - seen)
                    seen.update(fresh)
                    for c in fresh:
                        if c in sizes:
                            expected[c] = sizes[c]
                        visit(c)
                if incoming.due():
                    incoming.commit()
        except BaseException:
            for future in running:
                future.cancel()  # not started yet
            wait(running)  # the ones running end before what they staged is judged
            # What arrived whole is kept (named after its barrier, as always; no ref is made):
            # a pull run again fetches only the rest.
            with contextlib.suppress(Exception):
                incoming.commit()
            raise
        incoming.commit()


def pull(store: Store, remote: Remote, runs: list[str] | None = None) -> PullReport:
    """Fetch the runs of every ledger that pushed to ``remote`` (or only ``runs``: ids or
    unique prefixes, with the replays their verdicts name and the commits their code needs),
    walking links as gc does; then add the refs each origin pushed under ``import`` log lines,
    all or none (``door.admit``: a remote missing an object, or holding what ``ledger verify``
    rejects, adds nothing). The lease gc respects is held throughout."""
    remote.check(create=False)
    try:
        with entry_lease(store, "pull"):
            return _pull(store, remote, runs)
    finally:
        remote.close()


def _pull(store: Store, remote: Remote, runs: list[str] | None) -> PullReport:
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
    arrivals = [
        a
        for origin, refs in sorted(chosen.items())
        for a in from_origin(refs, {"ledger": origin, "head": origins[origin].get("head")})
    ]
    report.refs = admit(
        store,
        arrivals,
        source=f"remote {remote.url}",
        hint="push the runs again from a ledger that `ledger verify` accepts, or pull only "
        "the runs you need (`ledger pull REMOTE RUN...`)",
    )
    return report
