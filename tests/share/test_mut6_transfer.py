"""``push`` and ``pull`` as a user sees them: what they report and the progress they count, the
day after which a killed push's upload is swept, and the size up to which an object goes to S3
in one request.

Written for the round-6 mutation run of ``ledger/share/transfer.py`` (docs/mutation.md): each
test is a behaviour the mapped tests did not pin."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _s3_server import RemoteUnderTest, S3Server
from _share_lab import make_repo, record
from _support import one_byte_changes

from ledger._hashing import hash_bytes
from ledger._progress import listen
from ledger.errors import CorruptObjectError, UsageError
from ledger.share import transfer
from ledger.share.remote import Remote
from ledger.share.transfer import pull, push
from ledger.store import Store
from ledger.store.incoming import Incoming
from ledger.store.made import made_paths
from ledger.store.safe_read import NotRegularError


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository with two recorded runs of different data: (its folder)."""
    repo = make_repo(tmp_path_factory.mktemp("mut6") / "repo")
    record(repo)
    # Several MiB that compress: objects stored as zstd frames, read in more than one CHUNK.
    (repo / "data.csv").write_text("x\n" + "".join(f"{i}\n" for i in range(500_000)))
    record(repo)
    return repo


class _Progress:
    """A progress listener, as the CLI's: per stage, [total, files ticked, bytes ticked]."""

    def __init__(self) -> None:
        self.stages: dict[str, list[int | None]] = {}
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def __call__(self, what: str, total: int | None) -> Iterator[object]:
        counts: list[int | None] = [total, 0, 0]
        self.stages[what] = counts

        def tick(files: int, nbytes: int) -> None:
            with self._lock:
                counts[1] = int(counts[1] or 0) + files
                counts[2] = int(counts[2] or 0) + nbytes

        yield tick


def _remote_files(root: Path) -> dict[str, int]:
    return {
        "b3:" + p.parent.name + p.name: p.stat().st_size
        for p in (root / "objects").rglob("*")
        if p.is_file()
    }


def test_push_and_pull_report_and_count_every_object_and_byte(
    recorded: Path, tmp_path: Path
) -> None:
    store = Store.open(recorded / ".ledger")
    url = tmp_path / "remote"
    progress = _Progress()
    with listen(progress):
        first = push(store, Remote(str(url)))
    held = _remote_files(url)
    # The folder it filled is ledger's output, not the project's code (store/made.py).
    assert [m.kind for m in made_paths(store.root) if m.path == url] == ["remote"]
    assert first.sent == first.objects == len(held) > 3
    assert first.bytes_sent == sum(held.values())
    assert first.runs == [r.split("/", 1)[1] for r, _ in store.refs.iter("runs/")]
    assert first.replaced == 0 and first.refs >= 1
    assert progress.stages["pushing objects"] == [len(held), len(held), sum(held.values())]
    assert progress.stages["checking the remote's copies"] == [0, 0, 0]

    progress = _Progress()
    with listen(progress):
        again = push(store, Remote(str(url)))
    assert (again.sent, again.bytes_sent, again.objects) == (0, 0, len(held))
    assert progress.stages["checking the remote's copies"] == [len(held), len(held), 0]
    assert progress.stages["pushing objects"] == [0, 0, 0]

    here = Store.init(tmp_path / "here" / ".ledger")
    progress = _Progress()
    with listen(progress):
        got = pull(here, Remote(str(url)))
    assert got.fetched == len(held) and got.bytes_fetched == sum(held.values())
    assert progress.stages["pulling objects"] == [None, len(held), sum(held.values())]
    assert got.origins == [store.id]
    # Pulled again: everything is here, nothing is fetched or counted.
    progress = _Progress()
    with listen(progress):
        second = pull(here, Remote(str(url)))
    assert (second.fetched, second.bytes_fetched) == (0, 0)
    assert progress.stages["pulling objects"] == [None, 0, 0]
    # The pulled copy (its objects written as they streamed in) pushes back nothing: it
    # sizes each object as the remote lists it.
    back = push(here, Remote(str(url)))
    assert (back.sent, back.replaced, back.objects) == (0, 0, len(held))


def test_an_upload_left_in_tmp_is_swept_once_a_day_old_and_not_before(
    recorded: Path, tmp_path: Path
) -> None:
    store = Store.open(recorded / ".ledger")
    url = tmp_path / "remote"
    push(store, Remote(str(url)))
    now = time.time()
    ages = {"a-day-and-10-s": 86400 + 10, "a-day-less-a-minute": 86400 - 60}
    for name, age in ages.items():
        f = url / "tmp" / name
        f.write_bytes(b"half an object")
        os.utime(f, (now - age, now - age))
    push(store, Remote(str(url)))
    assert sorted(p.name for p in (url / "tmp").iterdir()) == ["a-day-less-a-minute"]


def _s3_calls(remote: Remote) -> list[str]:
    calls: list[str] = []
    remote.fs.connect()
    remote.fs.s3.meta.events.register("before-call.s3", lambda model, **_: calls.append(model.name))
    return calls


@pytest.mark.slow
def test_an_object_of_50_mib_goes_to_s3_in_one_request_and_a_byte_more_in_parts(
    tmp_path: Path, s3_server: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    store = Store.init(tmp_path / "here" / ".ledger")
    body = os.urandom(50 << 20)
    for size, whole in ((50 << 20, True), ((50 << 20) + 1, False)):
        oid = store.objects.put_bytes((body + b"x")[:size], compress=False)
        url = f"s3://{s3_server.bucket}/{uuid.uuid4().hex}"
        remote = Remote(url)
        remote.check(create=True)
        calls = _s3_calls(remote)
        assert transfer._send(store, remote, oid) == size
        if whole:
            assert calls == ["PutObject"], calls
        else:
            assert "CreateMultipartUpload" in calls and "CompleteMultipartUpload" in calls, calls
        assert RemoteUnderTest(url).objects().keys() == {oid}
        RemoteUnderTest(url).sound()


def test_pull_takes_each_run_named_by_full_id_or_by_prefix(recorded: Path, tmp_path: Path) -> None:
    store = Store.open(recorded / ".ledger")
    first, second = sorted(r.split("/", 1)[1] for r, _ in store.refs.iter("runs/"))
    url = str(tmp_path / "remote")
    push(store, Remote(url))
    here = Store.init(tmp_path / "here" / ".ledger")
    got = pull(here, Remote(url), [first, second[:-3]])
    assert {f"runs/{first}", f"runs/{second}"} <= set(got.refs.added)
    assert here.refs.get(f"runs/{first}") == store.refs.get(f"runs/{first}")
    assert here.refs.get(f"runs/{second}") == store.refs.get(f"runs/{second}")


def _remote_with_runs(tmp_path: Path, ids: list[str]) -> Remote:
    remote = Remote(str(tmp_path / "remote"))
    remote.check(create=True)
    other = Store.init(tmp_path / "other" / ".ledger")
    refs = {f"runs/{i}": "b3:" + f"{n:064x}" for n, i in enumerate(ids)}
    remote.write_origin(other.id, {"ledger": other.id, "head": None, "refs": refs})
    return remote


@pytest.mark.parametrize("count", [5, 6])
def test_an_ambiguous_run_prefix_names_five_matches_and_says_when_there_are_more(
    tmp_path: Path, count: int
) -> None:
    ids = [f"20261130T0600{i:02d}.000000Z-0000abc{i}" for i in range(count)]
    remote = _remote_with_runs(tmp_path, ids)
    here = Store.init(tmp_path / "here" / ".ledger")
    with pytest.raises(UsageError) as e:
        pull(here, remote, ["2026"])
    shown = ", ".join(ids[:5]) + (", ..." if count > 5 else "")
    assert e.value.message == (
        f"run prefix 2026 is ambiguous on the remote: {shown}; nothing was fetched"
    )
    assert list(here.refs.iter("")) == []


def _damaged_copy(recorded: Path, dest: Path, below: bool) -> tuple[Store, str]:
    """A copy of the recorded ledger with one raw object's last byte changed so that its
    content hashes below (or above) its id: (the copy, that id)."""
    shutil.copytree(recorded / ".ledger", dest)
    store = Store.open(dest)
    for oid in sorted(store.objects):
        path = store.objects.path_of(oid)
        data = path.read_bytes()
        if data[:1] != b"\x00" or len(data) < 2:
            continue
        for bad in one_byte_changes(data, first=1):  # the header's byte stays
            if (hash_bytes(bad[1:]) < oid) == below:
                path.chmod(0o644)
                path.write_bytes(bad)
                return store, oid
    raise AssertionError("no raw object to damage")


@pytest.mark.parametrize("kind", ["path", "s3"])
def test_an_object_corrupt_here_is_never_pushed_whichever_way_its_hash_differs(
    recorded: Path,
    tmp_path: Path,
    kind: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bucket = None
    if kind == "s3":  # read whole and sent in one request; to a path remote, streamed
        server: S3Server = request.getfixturevalue("s3_server")
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        bucket = server.bucket
    for below in (True, False):
        store, bad = _damaged_copy(recorded, tmp_path / f"copy-{below}" / ".ledger", below)
        url = f"s3://{bucket}/{uuid.uuid4().hex}" if bucket else str(tmp_path / f"r-{below}")
        with pytest.raises(CorruptObjectError, match=f"object {bad} is corrupt here"):
            push(store, Remote(url))
        assert bad not in RemoteUnderTest(url).objects()


def _sized_object(recorded: Path) -> tuple[str, int]:
    """A stored file's content whose size a record states beside its id (a file of the
    carried source tree): (its id, that size)."""
    store = Store.open(recorded / ".ledger")
    for oid in sorted(store.objects):
        data = store.objects.get_bytes(oid)
        if data[:1] != b"{":
            continue
        stack = [json.loads(data)]
        while stack:
            v = stack.pop()
            if isinstance(v, dict):
                link, size = v.get("oid") or v.get("digest"), v.get("size")
                sized = isinstance(size, int) and size > 0 and v.get("type", "file") == "file"
                if sized and isinstance(link, str) and store.objects.has(link):
                    return link, int(size)
                stack.extend(v.values())
            elif isinstance(v, list):
                stack.extend(v)
    raise AssertionError("no record states a stored file's size")


@pytest.mark.parametrize("delta", [-1, 1])
def test_a_remote_copy_one_byte_off_its_recorded_size_is_refused_before_downloading(
    recorded: Path, tmp_path: Path, delta: int
) -> None:
    url = tmp_path / "remote"
    push(Store.open(recorded / ".ledger"), Remote(str(url)))
    oid, size = _sized_object(recorded)
    victim = Path(Remote(str(url)).object_path(oid))
    victim.chmod(0o644)
    os.truncate(victim, size + delta)
    here = Store.init(tmp_path / "here" / ".ledger")
    with pytest.raises(CorruptObjectError) as e:
        pull(here, Remote(str(url)))
    assert e.value.message == (
        f"object {oid} on remote {url} is corrupt: it holds {size + delta} bytes, where "
        f"{size} were expected; nothing was downloaded"
    )
    assert not here.objects.has(oid) and list(here.refs.iter()) == []


def test_a_fifo_planted_as_a_sized_object_is_refused_by_what_it_is(
    recorded: Path, tmp_path: Path
) -> None:
    url = tmp_path / "remote"
    push(Store.open(recorded / ".ledger"), Remote(str(url)))
    oid, _ = _sized_object(recorded)
    victim = Path(Remote(str(url)).object_path(oid))
    victim.chmod(0o644)
    victim.unlink()
    os.mkfifo(victim)  # lists 0 bytes: refused by its size, but named as what it is
    here = Store.init(tmp_path / "here" / ".ledger")
    with pytest.raises(NotRegularError, match="not a regular file"):
        pull(here, Remote(str(url)))
    assert list(here.refs.iter()) == []


@pytest.mark.parametrize("which", ["latest", "older"])
def test_a_remote_run_record_read_to_find_a_run_name_is_checked_against_its_id(
    recorded: Path, tmp_path: Path, which: str
) -> None:
    """`pull REMOTE NAME` reads the remote's run records (latest first) to find NAME: one
    that holds another run's record is refused as corrupt, named by its id, and nothing is
    fetched (each way round: its content hashes below its id in one case, above in the other)."""
    store = Store.open(recorded / ".ledger")
    older, latest = (oid for _, oid in sorted(store.refs.iter("runs/")))
    url = tmp_path / "remote"
    push(store, Remote(str(url)))
    victim, other = (latest, older) if which == "latest" else (older, latest)
    path = Path(Remote(str(url)).object_path(victim))
    path.chmod(0o644)
    path.write_bytes(store.objects.get_bytes(other))
    here = Store.init(tmp_path / "here" / ".ledger")
    with pytest.raises(CorruptObjectError) as e:
        pull(here, Remote(str(url)), ["no-such-name"])
    assert e.value.message == (
        f"object {victim} on remote {url} is corrupt: its content does not hash to its id"
    )
    assert list(here.objects) == [] and list(here.refs.iter()) == []


@pytest.mark.parametrize("extra", [0, 1])
def test_a_remote_run_record_read_to_find_a_run_name_is_read_up_to_16_mib(
    recorded: Path, tmp_path: Path, extra: int
) -> None:
    """The remote's run records read to find a name are read into memory: one of 16 MiB (here
    a sound record padded with spaces, its id its content's) is read, one a byte longer is
    refused as corrupt, whatever its id."""
    store = Store.open(recorded / ".ledger")
    _, oid = next(store.refs.iter("runs/"))
    data = store.objects.get_bytes(oid)
    data += b" " * ((16 << 20) + extra - len(data))
    padded = hash_bytes(data)
    remote = Remote(str(tmp_path / "remote"))
    remote.check(create=True)
    run_ref = "runs/20261130T060000.000000Z-0000abcd"
    remote.write_origin(store.id, {"ledger": store.id, "head": None, "refs": {run_ref: padded}})
    path = Path(remote.object_path(padded))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    here = Store.init(tmp_path / "here" / ".ledger")
    if extra:
        with pytest.raises(CorruptObjectError) as e:
            pull(here, remote, ["no-such-name"])
        assert e.value.message == (
            f"object {padded} on remote {remote.url} is corrupt: its content does not hash to "
            "its id"
        )
    else:
        with pytest.raises(UsageError, match="no run no-such-name on the remote"):
            pull(here, remote, ["no-such-name"])
    assert list(here.objects) == [] and list(here.refs.iter()) == []


@pytest.mark.parametrize(
    ("size", "expected", "said"),
    [
        (1000, -1000, None),  # a ref's record: at most its limit, here met exactly
        (1001, -1000, "at most 1000 (a record)"),
        (1000, 1000, None),  # a file its record states the size of
        (1000, 0, "0"),  # a record stating 0 bytes: exactly 0, not "at most 0"
        (1, -1, None),  # "at most n" at its smallest n
        (2, -1, "at most 1 (a record)"),
    ],
)
def test_a_remote_copy_is_fetched_within_its_expected_size_and_refused_past_it(
    tmp_path: Path, size: int, expected: int, said: str | None
) -> None:
    remote = Remote(str(tmp_path / "remote"))
    remote.check(create=True)
    data = os.urandom(size)
    oid = hash_bytes(data)
    path = Path(remote.object_path(oid))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    store = Store.init(tmp_path / "here" / ".ledger")
    with Incoming(store.objects) as box:
        if said is None:
            assert transfer._fetch(remote, box, oid, size, expected).size == size
            box.commit()
        else:
            with pytest.raises(CorruptObjectError) as e:
                transfer._fetch(remote, box, oid, size, expected)
            assert e.value.message == (
                f"object {oid} on remote {remote.url} is corrupt: it holds {size} bytes, where "
                f"{said} were expected; nothing was downloaded"
            )
    assert store.objects.has(oid) == (said is None)
    assert os.listdir(store.tmp_dir) == []


def test_a_fifo_planted_as_an_empty_object_is_replaced_by_the_next_push(
    recorded: Path, tmp_path: Path
) -> None:
    """A FIFO lists 0 bytes, the size of an empty object (a run's empty output): a push that
    checks the remote's copy cannot read it as a file, takes it for damaged and sends the
    object again over it, so a pull then succeeds."""
    store = Store.open(recorded / ".ledger")
    empty = hash_bytes(b"")
    assert store.objects.has(empty)
    url = tmp_path / "remote"
    push(store, Remote(str(url)))
    victim = Path(Remote(str(url)).object_path(empty))
    victim.chmod(0o644)
    victim.unlink()
    os.mkfifo(victim)
    again = push(store, Remote(str(url)))
    assert (again.replaced, again.sent, again.bytes_sent) == (1, 1, 0)
    assert victim.is_file() and victim.stat().st_size == 0
    here = Store.init(tmp_path / "here" / ".ledger")
    assert pull(here, Remote(str(url))).refs.added and here.objects.has(empty)


def test_a_pull_checks_what_it_fetches_against_the_size_a_record_already_here_states(
    recorded: Path, tmp_path: Path
) -> None:
    """A ledger that holds a run's records but lacks a file they name (gc'd, or a pull cut
    short) reads the size from the record here: the remote's copy one byte short is refused
    before a byte is downloaded, as in a fresh pull."""
    url = tmp_path / "remote"
    push(Store.open(recorded / ".ledger"), Remote(str(url)))
    oid, size = _sized_object(recorded)
    shutil.copytree(recorded / ".ledger", tmp_path / "here" / ".ledger")
    here = Store.open(tmp_path / "here" / ".ledger")
    here.objects.delete(oid)
    victim = Path(Remote(str(url)).object_path(oid))
    victim.chmod(0o644)
    os.truncate(victim, size - 1)
    with pytest.raises(CorruptObjectError) as e:
        pull(here, Remote(str(url)))
    assert e.value.message == (
        f"object {oid} on remote {url} is corrupt: it holds {size - 1} bytes, where "
        f"{size} were expected; nothing was downloaded"
    )
    assert not here.objects.has(oid)


def test_records_too_large_to_read_as_they_arrive_are_followed_once_named(
    recorded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fetched record over the size kept in memory as it arrives (64 MiB: here, as if it
    were 512 bytes) has its links read from the store once it is named: the pull still
    brings every object, each fetched and counted once."""
    from ledger.store import incoming

    store = Store.open(recorded / ".ledger")
    url = tmp_path / "remote"
    push(store, Remote(str(url)))
    held = _remote_files(url)
    monkeypatch.setattr(incoming, "MAX_RECORD", 512)
    here = Store.init(tmp_path / "here" / ".ledger")
    got = pull(here, Remote(str(url)))
    assert (got.fetched, got.bytes_fetched) == (len(held), sum(held.values()))
    assert sorted(here.objects) == sorted(held)
    assert dict(here.refs.iter("")) == dict(store.refs.iter(""))


def test_pulling_a_chosen_run_passes_over_a_ref_of_one_part_on_the_remote(
    recorded: Path, tmp_path: Path
) -> None:
    """A remote's origin may hold a ref named by one part (``stray``: a valid ref name, which
    no run owns): pulling a chosen run takes that run's refs and leaves it."""
    store = Store.open(recorded / ".ledger")
    first, _ = sorted(r.split("/", 1)[1] for r, _ in store.refs.iter("runs/"))
    url = tmp_path / "remote"
    push(store, Remote(str(url)))
    origin = url / "origins" / f"{store.id}.json"
    data = json.loads(origin.read_text())
    data["refs"]["stray"] = store.refs.get(f"runs/{first}")
    origin.write_text(json.dumps(data))
    here = Store.init(tmp_path / "here" / ".ledger")
    got = pull(here, Remote(str(url)), [first])
    assert f"runs/{first}" in got.refs.added and "stray" not in got.refs.added
    assert here.refs.get("stray") is None


def test_a_pull_names_what_it_fetched_as_it_goes_not_only_at_its_end(
    recorded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fetched objects are made durable and named in batches while a pull goes on (every
    ``batch`` objects, or every half second), so a pull killed midway keeps what came before
    and the next fetches only the rest. Here a batch is one object: by the time a record's
    links are read, records fetched before it are stored."""
    from ledger.store import incoming

    store = Store.open(recorded / ".ledger")
    url = tmp_path / "remote"
    push(store, Remote(str(url)))
    monkeypatch.setattr(incoming, "_batch_size", lambda: 1)
    here = Store.init(tmp_path / "here" / ".ledger")
    stored_when_read: list[int] = []
    real = Remote.reading

    def reading(self: Remote, oid: str) -> Any:
        stored_when_read.append(len(list(here.objects)))
        return real(self, oid)

    monkeypatch.setattr(Remote, "reading", reading)
    got = pull(here, Remote(str(url)))
    assert got.refs.added and len(stored_when_read) == got.fetched
    assert max(stored_when_read) > 0, stored_when_read


def test_a_record_s_sizes_are_read_only_from_file_entries_stating_an_integer() -> None:
    """The sizes a pull checks fetched objects against: an entry's ``digest`` or ``oid`` with
    an integer ``size`` beside it, at any depth; not a folder's entry, not a size that is a
    bool or a string, and an entry naming an object without a size takes nothing from
    another that states it."""
    a, b, c, d, e = (f"b3:{n:064x}" for n in range(5))
    record = {
        "kind": "data",
        "schema": 1,
        "files": [
            {"path": "x", "digest": a},  # named first without its size, then with it
            {"path": "x", "digest": a, "size": 7},
            {"path": "d", "type": "dir", "oid": b, "size": 4096},
            {"path": "y", "digest": c, "size": True},
        ],
        "nested": {"deeper": [{"oid": d, "size": "12"}, {"oid": e, "size": 0}]},
    }
    assert transfer._sizes_named(record) == {a: 7, e: 0}


def test_a_pull_stops_at_its_first_failure_and_keeps_what_was_in_flight(
    recorded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first object a pull cannot fetch stops its walk: what is queued behind it is not
    started, and what a worker was already fetching is waited for and kept (named, as what
    arrived before), so the next pull fetches only the rest. Here the third object read fails
    while the fourth is being read; a fifth may have been taken by the freed worker already."""
    from concurrent.futures import ALL_COMPLETED

    from ledger.errors import LedgerAccessError

    store = Store.open(recorded / ".ledger")
    url = tmp_path / "remote"
    push(store, Remote(str(url)))
    monkeypatch.setattr(transfer, "WORKERS", 2)
    read: list[str] = []
    lock = threading.Lock()
    fourth, stopping = threading.Event(), threading.Event()
    real_reading, real_wait = Remote.reading, transfer.wait

    def reading(self: Remote, oid: str) -> Any:
        with lock:
            read.append(oid)
            n = len(read)
        if n == 3:
            fourth.wait(30)
            raise OSError("connection refused")
        if n >= 4:
            fourth.set()
            stopping.wait(10)  # until the walk has stopped: in flight, not queued
        return real_reading(self, oid)

    def waiting(fs: Any, timeout: float | None = None, return_when: str = ALL_COMPLETED) -> Any:
        if return_when == ALL_COMPLETED:
            stopping.set()
        return real_wait(fs, timeout, return_when)

    monkeypatch.setattr(Remote, "reading", reading)
    monkeypatch.setattr(transfer, "wait", waiting)
    here = Store.init(tmp_path / "here" / ".ledger")
    with pytest.raises(LedgerAccessError, match="cannot be reached"):
        pull(here, Remote(str(url)))
    assert 4 <= len(read) <= 5, read
    assert sorted(here.objects) == sorted(read[:2] + read[3:])
    assert list(here.refs.iter("")) == []


def test_a_push_to_a_folder_streams_an_object_never_holding_it_whole(tmp_path: Path) -> None:
    """Only an S3 push reads an object of up to 50 MiB whole (for its one PUT); to a folder
    it is hashed and written a ``CHUNK`` (1 MiB) at a time, so eight workers never hold
    eight objects' bytes."""
    import tracemalloc

    store = Store.init(tmp_path / "here" / ".ledger")
    oid = store.objects.put_bytes(os.urandom(8 << 20), compress=False)
    remote = Remote(str(tmp_path / "remote"))
    remote.check(create=True)
    tracemalloc.start()
    try:
        assert transfer._send(store, remote, oid) == 8 << 20
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, peak
    assert _remote_files(tmp_path / "remote") == {oid: 8 << 20}


@pytest.mark.parametrize("below", [True, False])
def test_a_folder_copy_of_the_right_size_is_sent_again_whichever_way_its_hash_differs(
    recorded: Path, tmp_path: Path, below: bool
) -> None:
    """A path remote's copy of the right size whose bytes hash below (or above) its id is
    damaged all the same: the next push sends the object again over it."""
    store = Store.open(recorded / ".ledger")
    url = tmp_path / "remote"
    push(store, Remote(str(url)))
    oid, _ = _sized_object(recorded)
    victim = Path(Remote(str(url)).object_path(oid))
    data = victim.read_bytes()
    bad = next(b for b in one_byte_changes(data) if (hash_bytes(b) < oid) == below)
    victim.chmod(0o644)
    victim.write_bytes(bad)
    again = push(store, Remote(str(url)))
    assert (again.replaced, again.sent) == (1, 1)
    assert victim.read_bytes() == data


def test_a_pull_that_fetches_only_a_record_too_large_to_read_as_it_arrives_ends(
    recorded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When nothing is left in flight but the links of a fetched record still to read once it
    is named (a record over the in-memory limit: here, as if it were 512 bytes), the pull
    names it, reads those links, and ends. Here the ledger lacks only the run record of the
    run it pulls."""
    from ledger.store import incoming

    store = Store.open(recorded / ".ledger")
    url = tmp_path / "remote"
    push(store, Remote(str(url)))
    name, record = sorted(store.refs.iter("runs/"))[-1]
    here = Store.init(tmp_path / "here" / ".ledger")
    for oid in sorted(store.objects):
        if oid != record:
            assert here.objects.put_bytes(store.objects.get_bytes(oid)) == oid
    monkeypatch.setattr(incoming, "MAX_RECORD", 512)
    got = pull(here, Remote(str(url)), [name.split("/", 1)[1]])
    assert got.fetched == 1 and name in got.refs.added
    assert here.refs.get(name) == record
