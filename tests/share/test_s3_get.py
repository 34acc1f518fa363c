"""Reading an S3 object's body straight from the socket (``ledger.share.s3_get``), against a
scripted HTTP server on loopback: each answer is what a test says (a body cut short, a busy
server, a refusal, a connection closed while idle), and every request is recorded."""

from __future__ import annotations

import http.server
import os
import threading
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger._hashing import hash_bytes
from ledger.errors import CorruptObjectError
from ledger.share import s3_get
from ledger.share.remote import Remote
from ledger.share.s3_get import DirectGets, DirectReader, direct_gets
from ledger.share.transfer import _fetch
from ledger.store import Store
from ledger.store.incoming import Incoming

BODY = os.urandom(300_000)

# An answer: (status, headers, body bytes to send, whether to close the connection after).
Answer = tuple[int, dict[str, str], bytes, bool]


class _Script:
    """What the server answers, request by request, and what it was asked."""

    def __init__(self, answer: Callable[[int, str | None], Answer]) -> None:
        self.answer = answer
        self.asked: list[str | None] = []  # each request's Range header
        self.connections = 0


def _handler(script: _Script) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # connections kept between requests

        def setup(self) -> None:
            script.connections += 1
            super().setup()

        def do_GET(self) -> None:
            assert "X-Amz-Signature=" in self.path  # the presigned URL, as made
            wanted = self.headers.get("Range")
            script.asked.append(wanted)
            status, headers, body, close = script.answer(len(script.asked), wanted)
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            if close:
                self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def serve() -> Iterator[Callable[..., tuple[_Script, DirectGets]]]:
    """``serve(answer, retries=5)``: a server answering with ``answer(n, range)``, and the
    ``DirectGets`` of a stand-in for s3fs's filesystem whose presigned URLs point at it
    (closed at the end)."""
    servers: list[http.server.ThreadingHTTPServer] = []
    made: list[DirectGets] = []

    def start(
        answer: Callable[[int, str | None], Answer], retries: int = 5
    ) -> tuple[_Script, DirectGets]:
        script = _Script(answer)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
        server.daemon_threads = True
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        port = server.server_address[1]
        fs = types.SimpleNamespace(
            url=lambda path, expires: f"http://127.0.0.1:{port}/{path}?X-Amz-Signature=x",
            retries=retries,
            read_timeout=3,
        )
        made.append(DirectGets(fs))
        return script, made[-1]

    yield start
    for gets in made:
        gets.close()
    for server in servers:
        server.shutdown()
        server.server_close()


def _whole(n: int, wanted: str | None) -> Answer:
    """The object, whole or from the range asked for."""
    if wanted is None:
        return 200, {"Content-Length": str(len(BODY))}, BODY, False
    start = int(wanted.removeprefix("bytes=").rstrip("-"))
    rest = BODY[start:]
    return 206, {"Content-Length": str(len(rest))}, rest, False


def _read_all(reader: DirectReader, piece: int = 1 << 16) -> bytes:
    out = bytearray()
    buf = memoryview(bytearray(piece))
    while n := reader.readinto(buf):
        out += buf[:n]
    reader.close()
    return bytes(out)


def test_bodies_are_read_whole_over_one_connection_kept_between_gets(serve: Any) -> None:
    script, gets = serve(_whole)
    for _ in range(3):
        reader = gets.open("bucket/key")
        assert reader.size == len(BODY)
        assert _read_all(reader) == BODY
    assert script.asked == [None, None, None] and script.connections == 1


def test_a_body_that_ends_early_is_read_on_from_the_byte_it_stopped_at(serve: Any) -> None:
    """The server sends 50,000 bytes of what it stated and closes: the rest is asked for with
    a ranged GET from byte 50,000 and the object arrives whole."""

    def cut_once(n: int, wanted: str | None) -> Answer:
        if n == 1:
            return 200, {"Content-Length": str(len(BODY))}, BODY[:50_000], True
        return _whole(n, wanted)

    script, gets = serve(cut_once)
    assert _read_all(gets.open("bucket/key")) == BODY
    assert script.asked == [None, "bytes=50000-"]


def test_a_body_that_always_ends_early_is_refused_after_as_many_tries_as_s3fs_makes(
    serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(s3_get.time, "sleep", lambda s: None)

    def always_cut(n: int, wanted: str | None) -> Answer:
        status, headers, body, _ = _whole(n, wanted)
        return status, headers, body[:10_000], True

    script, gets = serve(always_cut, retries=3)
    reader = gets.open("bucket/key")
    with pytest.raises(OSError, match="the body ended at byte 30000 of 300000"):
        _read_all(reader)
    assert script.asked == [None, "bytes=10000-", "bytes=20000-"]


def test_a_busy_server_is_asked_again_and_a_refusal_is_raised_at_once(
    serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(s3_get.time, "sleep", lambda s: None)
    slow = b"<Error><Code>SlowDown</Code></Error>"

    def busy_twice(n: int, wanted: str | None) -> Answer:
        if n <= 2:
            return 503, {"Content-Length": str(len(slow))}, slow, False
        return _whole(n, wanted)

    script, gets = serve(busy_twice)
    assert _read_all(gets.open("bucket/key")) == BODY
    assert len(script.asked) == 3
    for status, error in ((404, FileNotFoundError), (403, PermissionError)):
        said = b"<Error><Code>NoSuchKeyOrAccess</Code></Error>"
        script, gets = serve(
            lambda n, w, s=status, b=said: (s, {"Content-Length": str(len(b))}, b, False)
        )
        with pytest.raises(error, match=f"GET bucket/key: {status} NoSuchKeyOrAccess"):
            gets.open("bucket/key")
        assert len(script.asked) == 1


def test_an_idle_connection_the_server_closed_is_replaced_without_counting_a_failure(
    serve: Any,
) -> None:
    """The server closes each connection after its answer without saying so (an idle
    timeout): the next GET meets a dead connection, and opens a new one; with one try
    allowed, that is no failure."""

    def then_close(n: int, wanted: str | None) -> Answer:
        status, headers, body, _ = _whole(n, wanted)
        return status, headers, body, True

    script, gets = serve(then_close, retries=1)
    for _ in range(3):
        assert _read_all(gets.open("bucket/key")) == BODY
    assert len(script.asked) == 3 and script.connections == 3


def _remote_reading_from(tmp_path: Path, gets: DirectGets) -> Remote:
    remote = Remote(str(tmp_path / "remote"))

    def reading(oid: str) -> Any:
        import contextlib

        @contextlib.contextmanager
        def opened() -> Iterator[DirectReader]:
            reader = gets.open("bucket/" + oid)
            try:
                yield reader
            finally:
                reader.close()

        return opened()

    remote.reading = reading  # type: ignore[method-assign]
    return remote


def test_an_answer_stating_more_than_expected_is_refused_before_its_body_is_read(
    serve: Any, tmp_path: Path
) -> None:
    # The head states the size and no byte of the body follows: reading any would wait.
    _, gets = serve(lambda n, w: (200, {"Content-Length": str(len(BODY))}, b"", False))
    remote = _remote_reading_from(tmp_path, gets)
    store = Store.init(tmp_path / ".ledger")
    oid = hash_bytes(BODY[:1000])
    with (
        Incoming(store.objects) as box,
        pytest.raises(CorruptObjectError, match="more than the 1000 bytes"),
    ):
        _fetch(remote, box, oid, 1000, None)
    assert os.listdir(store.tmp_dir) == [] and list(store.objects) == []


def test_a_body_cut_short_every_time_is_not_stored(
    serve: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An object whose body never arrives whole fails the fetch (the remote cannot be
    reached, exit 3) and leaves nothing: no object, no temp file."""
    from ledger.errors import LedgerAccessError

    monkeypatch.setattr(s3_get.time, "sleep", lambda s: None)

    def always_cut(n: int, wanted: str | None) -> Answer:
        status, headers, body, _ = _whole(n, wanted)
        return status, headers, body[:10_000], True

    _, gets = serve(always_cut, retries=2)
    remote = _remote_reading_from(tmp_path, gets)
    store = Store.init(tmp_path / ".ledger")
    with Incoming(store.objects) as box, pytest.raises(LedgerAccessError, match="body ended"):
        _fetch(remote, box, hash_bytes(BODY), len(BODY), len(BODY))
    assert os.listdir(store.tmp_dir) == [] and list(store.objects) == []


def test_a_body_that_is_not_the_object_is_refused(serve: Any, tmp_path: Path) -> None:
    _, gets = serve(_whole)
    remote = _remote_reading_from(tmp_path, gets)
    store = Store.init(tmp_path / ".ledger")
    oid = hash_bytes(BODY[:-1] + b"?")
    with Incoming(store.objects) as box, pytest.raises(CorruptObjectError, match="hashes to"):
        _fetch(remote, box, oid, len(BODY), len(BODY))
    assert list(store.objects) == []


def _fs(endpoint: str, **options: Any) -> Any:
    meta = types.SimpleNamespace(endpoint_url=endpoint)
    fs = types.SimpleNamespace(
        s3=types.SimpleNamespace(meta=meta),
        requester_pays=False,
        s3_additional_kwargs={},
        client_kwargs={},
        config_kwargs={},
        retries=5,
        read_timeout=15,
    )
    for k, v in options.items():
        setattr(fs, k, v)
    return fs


def test_direct_gets_are_used_only_where_they_mean_what_s3fs_s_would(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(direct_gets(_fs("http://127.0.0.1:8333")), DirectGets)
    assert isinstance(
        direct_gets(_fs("http://s3.lan", client_kwargs={"region_name": "x"})), DirectGets
    )
    for refused in (
        _fs("https://s3.amazonaws.com"),
        _fs("http://127.0.0.1:8333", requester_pays=True),
        _fs("http://127.0.0.1:8333", s3_additional_kwargs={"SSECustomerKey": "k"}),
        _fs("http://127.0.0.1:8333", client_kwargs={"verify": False}),
        _fs("http://127.0.0.1:8333", config_kwargs={"proxies": {"http": "http://p:3128"}}),
        types.SimpleNamespace(),  # s3fs made no client
    ):
        assert direct_gets(refused) is None, refused
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.lan:3128")
    assert direct_gets(_fs("http://s3.lan:8333")) is None
    monkeypatch.setenv("NO_PROXY", "s3.lan")
    assert isinstance(direct_gets(_fs("http://s3.lan:8333")), DirectGets)
