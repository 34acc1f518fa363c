"""How ``push`` and ``pull`` move objects (issue 38): a pull follows an object's links as soon
as that object is stored, not once every object at its depth is (a slow object holds up only
what it links to); a push to S3 uploads each object once, to its own key, with no copy on the
server, and an object whose bytes do not hash to its id never appears there."""

from __future__ import annotations

import json
import os
import threading
import uuid
from pathlib import Path
from typing import Any, BinaryIO

import pytest
from _s3_server import RemoteUnderTest, S3Server
from _share_lab import make_repo, record
from _support import run_ledger

from ledger.errors import CorruptObjectError
from ledger.share import transfer
from ledger.share.path_fs import PathFS
from ledger.share.remote import Remote
from ledger.share.transfer import pull, push
from ledger.store import Store
from ledger.store.walk import links_of


def _two_runs(tmp_path: Path) -> tuple[Path, str, str]:
    """A ledger with two runs of different inputs: (repo, record of A, record of B)."""
    repo = make_repo(tmp_path / "repo")
    a = record(repo)
    (repo / "data.csv").write_text("x\n1\n2\n3\n")
    b = record(repo)
    store = Store.open(repo / ".ledger")
    return repo, store.refs.get(f"runs/{a}"), store.refs.get(f"runs/{b}")


class _HoldOne(PathFS):
    """A path remote whose object ``held`` cannot be opened until one of ``wanted`` has been
    opened (or 60 s have passed): whether ``wanted`` is reached while ``held`` is pending."""

    def __init__(self, root: str, held: str, wanted: set[str]) -> None:
        super().__init__(root)
        self.held, self.wanted = held, wanted
        self.reached = threading.Event()
        self.reached_while_held = False

    def open(self, path: str, mode: str = "rb") -> BinaryIO:
        if path == self.held:
            self.reached_while_held = self.reached.wait(60)
        elif path in self.wanted:
            self.reached.set()
        return super().open(path, mode)


def test_a_pull_follows_a_record_s_links_while_another_record_is_still_arriving(
    tmp_path: Path,
) -> None:
    repo, rec_a, rec_b = _two_runs(tmp_path)
    url = str(tmp_path / "remote")
    assert run_ledger("push", url, cwd=repo).returncode == 0
    source = Store.open(repo / ".ledger")
    only_b = {c for c, _ in links_of(source.objects, rec_b) if source.objects.has(c)} - {
        c for c, _ in links_of(source.objects, rec_a)
    }
    assert only_b  # B's inputs differ: its record names stored objects A's does not

    remote = Remote(url)
    held = _HoldOne(remote.root, remote.object_path(rec_a), {remote.object_path(o) for o in only_b})
    remote.fs = held
    here = Store.init(tmp_path / "here" / ".ledger")
    report = pull(here, remote)
    # Round by round, B's links were fetched only after A's record had arrived: the pull
    # waited on the slowest object of each depth before starting the next.
    assert held.reached_while_held
    assert report.refs.added and all(here.objects.has(o) for o in (rec_a, rec_b, *only_b))


def _s3_calls(remote: Remote) -> list[str]:
    """The S3 operations ``remote``'s client sends from now on, by name, in order."""
    calls: list[str] = []
    remote.fs.connect()
    remote.fs.s3.meta.events.register("before-call.s3", lambda model, **_: calls.append(model.name))
    return calls


def test_an_s3_push_uploads_each_object_once_with_no_copy_on_the_server(
    tmp_path: Path, s3_server: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    repo, _, _ = _two_runs(tmp_path)
    url = f"s3://{s3_server.bucket}/{uuid.uuid4().hex}"
    remote = Remote(url)
    calls = _s3_calls(remote)
    report = push(Store.open(repo / ".ledger"), remote)
    assert report.sent > 5
    # One PUT per object and one for the refs (plus the marker): an upload to tmp/ copied
    # into place on the server and deleted there costs two more requests per object and
    # has the server write every byte twice.
    assert "CopyObject" not in calls and "DeleteObject" not in calls, calls
    assert calls.count("PutObject") == report.sent + 2, calls
    RemoteUnderTest(url).sound()
    assert RemoteUnderTest(url).files("tmp") == []


def _corrupt_one(store: Store) -> str:
    """Flip the last byte of a raw object of ``store``: its id is no longer its content's."""
    for oid in store.objects:
        path = store.objects.path_of(oid)
        data = path.read_bytes()
        if data[:1] == b"\x00" and len(data) > 1:
            path.chmod(0o644)
            path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
            return oid
    raise AssertionError("no raw object to damage")


def test_an_object_corrupt_here_never_appears_on_s3(
    tmp_path: Path, s3_server: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    repo, _, _ = _two_runs(tmp_path)
    store = Store.open(repo / ".ledger")
    bad = _corrupt_one(store)
    url = f"s3://{s3_server.bucket}/{uuid.uuid4().hex}"
    remote = Remote(url)
    with pytest.raises(CorruptObjectError, match="it was not pushed"):
        push(store, remote)
    seen = RemoteUnderTest(url)
    assert bad not in seen.objects() and seen.files("tmp") == [] and seen.files("origins") == []
    seen.sound()  # what did arrive is whole
    bucket = s3_server.bucket
    pending = [u for u in remote.fs.list_multipart_uploads(bucket) if url[5:] in u["Key"]]
    assert pending == []


def test_a_push_aborts_unfinished_uploads_of_objects_once_a_day_old(
    tmp_path: Path, s3_server: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a push killed while uploading a large object leaves (an unfinished multipart
    upload: invisible, but stored) is removed by a later push, as its ``tmp/`` files are;
    a younger one may be a teammate's push still running, and is kept."""
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    repo, _, _ = _two_runs(tmp_path)
    prefix = uuid.uuid4().hex
    remote = Remote(f"s3://{s3_server.bucket}/{prefix}")
    remote.check(create=True)
    key = f"{prefix}/objects/b3/ab/{'c' * 62}"
    started = remote.fs.call_s3("create_multipart_upload", Bucket=s3_server.bucket, Key=key)
    upload = started["UploadId"]

    def pending() -> list[Any]:
        found = remote.fs.list_multipart_uploads(s3_server.bucket)
        return [u for u in found if u["UploadId"] == upload]

    assert pending()
    push(Store.open(repo / ".ledger"), remote)
    assert pending(), "a recent upload (maybe a push in progress) was aborted"
    monkeypatch.setattr(transfer, "STALE_UPLOAD_S", -60)  # as if a day had passed
    push(Store.open(repo / ".ledger"), remote)
    assert pending() == []


def test_push_and_clone_keep_working_through_a_path_remote(tmp_path: Path) -> None:
    repo, _, _ = _two_runs(tmp_path)
    url = str(tmp_path / "remote")
    r = run_ledger("push", url, "--json", cwd=repo)
    assert r.returncode == 0, r.stderr
    sent = json.loads(r.stdout)["sent"]
    r = run_ledger("clone", url, str(tmp_path / "clone"), "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["fetched"] == sent
    assert run_ledger("verify", cwd=tmp_path / "clone").returncode == 0
    assert list((tmp_path / "remote" / "tmp").iterdir()) == []


@pytest.mark.slow
def test_a_large_object_corrupt_here_is_aborted_on_s3_not_completed(
    tmp_path: Path, s3_server: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An object over ``WHOLE_UPLOAD`` goes as a multipart upload, its parts sent before its
    hash is known: one that does not hash to its id is aborted, never completed."""
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    store = Store.init(tmp_path / "here" / ".ledger")
    big = store.objects.put_bytes(os.urandom(transfer.WHOLE_UPLOAD + (6 << 20)), compress=False)
    path = store.objects.path_of(big)
    path.chmod(0o644)
    with path.open("r+b") as f:
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([last[0] ^ 1]))
    url = f"s3://{s3_server.bucket}/{uuid.uuid4().hex}"
    remote = Remote(url)
    remote.check(create=True)
    calls = _s3_calls(remote)
    with pytest.raises(CorruptObjectError, match="it was not pushed"):
        transfer._send(store, remote, big)
    assert "CreateMultipartUpload" in calls and "AbortMultipartUpload" in calls, calls
    assert "CompleteMultipartUpload" not in calls, calls
    assert big not in RemoteUnderTest(url).objects()
    pending = [u for u in remote.fs.list_multipart_uploads(s3_server.bucket) if url[5:] in u["Key"]]
    assert pending == []
