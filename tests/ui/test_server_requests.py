"""``ledger ui``'s server under hostile clients: a connection that sends half a request and idles
holds up no one; one Host header, exactly; oversized filters are a 400 that says why."""

from __future__ import annotations

import http.client
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from _support import run_ledger
from _ui_lab import add_run

from ledger.store import Store
from ledger.ui.server import MAX_RUNS, make_server

RUN = "20261130T060000.000000Z-0000aaaa"


@pytest.fixture
def port(tmp_path: Path) -> Iterator[int]:
    store = Store.init(tmp_path / ".ledger")
    add_run(store, RUN, {"loss": [(0, 1.0), (1, 0.5)]}, name="first", config={"lr": 0.1})
    server = make_server(store, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _get(port: int, path: str, hosts: list[str] | None = None) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.putrequest("GET", path, skip_host=True)
    for host in [f"127.0.0.1:{port}"] if hosts is None else hosts:
        conn.putheader("Host", host)
    conn.endheaders()
    r = conn.getresponse()
    body = r.read().decode("utf-8", errors="replace")
    conn.close()
    return r.status, body


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_half_open_connections_do_not_block_other_requests(port: int) -> None:
    idle = []
    for _ in range(5):
        s = socket.create_connection(("127.0.0.1", port), timeout=120)
        s.sendall(f"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
        idle.append(s)  # ... and never the blank line that ends the request
    try:
        status, body = _get(port, "/")
        assert status == 200 and "first" in body
        # The idle connections were still open and waiting, not dropped to make room: each
        # finishes its request now and gets its page.
        for s in idle:
            s.sendall(b"\r\n")
            assert _read_all(s).startswith(b"HTTP/1.0 200")
    finally:
        for s in idle:
            s.close()


def test_a_request_with_two_host_headers_is_refused(port: int) -> None:
    good, evil = f"127.0.0.1:{port}", "evil.example:80"
    assert _get(port, "/", [good])[0] == 200
    assert _get(port, "/", [evil])[0] == 421
    for hosts in ([good, evil], [evil, good], [good, good]):
        status, body = _get(port, "/", hosts)
        assert status == 400 and "more than one Host header" in body, hosts
    assert _get(port, "/", [])[0] == 421  # none at all names no server


def test_a_where_of_3000_terms_is_a_clear_400(port: int) -> None:
    where = " and ".join(["name=x"] * 3000)
    status, body = _get(port, "/index.html?" + urlencode({"where": where}))
    assert status == 400, body[:500]
    assert "3000 terms" in body and "at most 100" in body
    # A page of runs asked for many times over is refused the same way.
    runs = urlencode([("run", RUN)] * (MAX_RUNS + 1))
    status, body = _get(port, "/curves.html?" + runs)
    assert status == 400 and f"at most {MAX_RUNS}" in body
    # Within the bounds, the filters still work and the server still answers.
    where = " and ".join(["params.lr > 0.05"] * 100)
    status, body = _get(port, "/index.html?" + urlencode({"where": where}))
    assert status == 200 and "first" in body


def test_ls_with_3000_where_filters_exits_2_with_a_message(tmp_path: Path) -> None:
    Store.init(tmp_path / ".ledger")
    args = [a for i in range(3000) for a in ("--where", f"params.p{i} > 0")]
    r = run_ledger("ls", *args, cwd=tmp_path)
    assert r.returncode == 2, r.stderr[-2000:]
    assert "3000 --where filters given; at most 100" in r.stderr
    assert "ledger: hint:" in r.stderr and "Traceback" not in r.stderr
