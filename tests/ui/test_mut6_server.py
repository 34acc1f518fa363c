"""``ledger ui``'s pages as a user drives them: the filters of the runs page, the page size and
the curves link, the curves, compare and parallel pages' choices, the error pages, and the
HTTP answers themselves (lengths, HEAD, a failing page, a server bound for the network).

Written for the round-6 mutation run of ``ledger/ui/server.py`` (docs/mutation.md): each test
is a behaviour the mapped tests did not pin."""

from __future__ import annotations

import http.client
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest
from _ui_lab import add_run

from ledger.run.curate import retract_run
from ledger.store import Store
from ledger.ui import data
from ledger.ui.server import make_server, route

A = "20261130T060000.000000Z-0000aaaa"
B = "20261130T060100.000000Z-0000bbbb"
C = "20261130T060200.000000Z-0000cccc"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    store = Store.init(tmp_path / ".ledger")
    add_run(
        store,
        A,
        {"acc": [(0, 0.5), (1, 0.7)], "loss": [(0, 1.0), (1, 0.5)]},
        name="alpha",
        tags={"team": "red"},
        config={"lr": 0.1},
        stdout="hello\n",
    )
    add_run(
        store,
        B,
        {"acc": [(0, 0.4), (1, 0.6)], "loss": [(0, 2.0), (1, 0.9)]},
        name="beta",
        tags={"team": "blue"},
        status="failed",
        config={"lr": 0.01},
        minute=1,
    )
    add_run(
        store,
        C,
        {"loss": [(0, 3.0), (1, 2.0)]},
        name="gamma",
        tags={"team": "red"},
        config={"lr": 0.001},
        minute=2,
    )
    return store


def _page(store: Store, url: str) -> tuple[int, str]:
    status, _, body = route(store, url)
    return status, body.decode()


def _rows(body: str) -> list[str]:
    return re.findall(r'<tr class="run[^"]*" data-run="([^"]+)">', body)


def _served(store: Store, host: str = "127.0.0.1", **kw: object) -> Iterator[int]:
    server = make_server(store, host, 0, **kw)  # type: ignore[arg-type]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def port(store: Store) -> Iterator[int]:
    yield from _served(store)


def _get(
    port: int, path: str, method: str = "GET", host: str | None = None
) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.putrequest(method, path, skip_host=True)
    conn.putheader("Host", host or f"127.0.0.1:{port}")
    conn.endheaders()
    return conn.getresponse()


# The runs page: filters, pages, the curves link.


def test_the_runs_page_filters_by_name_tag_and_the_first_status_given(store: Store) -> None:
    assert _rows(_page(store, "/index.html?name=alpha")[1]) == [A]
    assert _rows(_page(store, "/index.html?tag=team%3Dblue")[1]) == [B]
    assert sorted(_rows(_page(store, "/index.html?tag=team%3Dred")[1])) == [A, C]
    # A query string naming a field twice: the first value is the one taken.
    assert _rows(_page(store, "/index.html?status=failed&status=succeeded")[1]) == [B]
    assert sorted(_rows(_page(store, "/index.html?status=nonsense")[1])) == [A, B, C]


@pytest.mark.parametrize("tag", ["team", "=red"])
def test_a_tag_filter_that_is_not_key_value_is_shown_as_an_error(store: Store, tag: str) -> None:
    status, body = _page(store, "/index.html?" + urlencode({"tag": tag}))
    assert status == 200
    assert f"tag {tag!r} is not KEY=VALUE".replace("'", "&#39;") in body
    assert sorted(_rows(body)) == [A, B, C]  # and nothing is filtered by it


@pytest.mark.parametrize("page", ["abc", "0", "-3"])
def test_a_page_number_that_is_not_one_shows_the_first_page(store: Store, page: str) -> None:
    status, body = _page(store, f"/index.html?page={page}")
    assert status == 200 and sorted(_rows(body)) == [A, B, C]
    assert "page 1 " in body and 'id="prev"' not in body


def test_retracted_runs_show_only_with_the_toggle(store: Store) -> None:
    retract_run(store, B, "wrong data")
    assert sorted(_rows(_page(store, "/index.html")[1])) == [A, C]
    for on in ("1", "on", "true", "YES"):
        assert sorted(_rows(_page(store, f"/index.html?retracted={on}")[1])) == [A, B, C], on
    assert sorted(_rows(_page(store, "/index.html?retracted=no")[1])) == [A, C]


def test_a_page_holds_50_runs_and_its_curves_link_the_first_10(tmp_path: Path) -> None:
    store = Store.init(tmp_path / ".ledger")
    ids = [f"20261130T06{i:02d}00.000000Z-{i:08x}" for i in range(51)]
    for i, run_id in enumerate(ids):
        add_run(store, run_id, minute=i)
    status, first = _page(store, "/index.html")
    assert status == 200 and len(_rows(first)) == 50 and 'id="next"' in first
    assert 'id="prev"' not in first
    nav = re.search(r'<a href="([^"]*)" id="nav-curves">', first)
    assert nav is not None
    linked = re.findall(r"run=([^&\"]+)", nav.group(1))
    assert linked == _rows(first)[:10]
    _, second = _page(store, "/index.html?page=2")
    assert len(_rows(second)) == 1 and 'id="prev"' in second and 'id="next"' not in second
    # The curves page without runs named draws the newest 10 (the first 10 rows).
    _, curves = _page(store, "/curves.html")
    assert "10 run(s)" in curves
    assert all(f"<code>{r}</code>" in curves for r in _rows(first)[:10])
    assert set(_rows(first)) | set(_rows(second)) == set(ids)


# Curves, compare, parallel.


def test_the_curves_page_draws_the_runs_named_and_no_others(store: Store) -> None:
    _, body = _page(store, f"/curves.html?run={A}")
    assert "1 run(s)" in body and f"<code>{A}</code>" in body and B not in body
    _, body = _page(store, f"/curves.html?run={A},{C}")
    assert "2 run(s)" in body


def test_a_curves_page_may_name_100_runs_and_not_101(store: Store) -> None:
    status, body = _page(store, "/curves.html?" + urlencode([("run", A)] * 100))
    assert status == 200 and "1 run(s)" in body  # the same run, named 100 times
    status, body = _page(store, "/curves.html?" + urlencode([("run", A)] * 101))
    assert status == 400 and "101 runs asked for" in body and "at most 100" in body


def _axis(body: str) -> str:
    m = re.search(r"x-axis: .*?<strong>([^<]+)</strong>", body, re.S)
    assert m is not None
    return m.group(1)


def test_the_curves_axis_comes_from_the_path_then_the_query(store: Store) -> None:
    assert _axis(_page(store, f"/curves.html?run={A}")[1]) == "step"
    assert _axis(_page(store, f"/curves-samples.html?run={A}")[1]) == "samples seen"
    assert _axis(_page(store, f"/curves-wall.html?run={A}&x=samples")[1]).startswith("wall")
    assert _axis(_page(store, f"/curves.html?run={A}&x=samples")[1]) == "samples seen"
    status, body = _page(store, f"/curves.html?run={A}&x=bogus")
    assert status == 200 and _axis(body) == "step"


def _grouping(body: str) -> str:
    m = re.search(r'<p id="grouping">group: .*?<strong>([^<]+)</strong>', body, re.S)
    assert m is not None
    return m.group(1)


def test_curves_group_by_name_or_a_tag_the_runs_carry(store: Store) -> None:
    runs = f"run={A}&run={B}"
    assert _grouping(_page(store, f"/curves.html?{runs}")[1]) == "one line per run"
    assert _grouping(_page(store, f"/curves-grouped.html?{runs}")[1]) == "name"
    assert _grouping(_page(store, f"/curves.html?{runs}&group=1")[1]) == "name"
    status, body = _page(store, f"/curves.html?{runs}&group=tag:team&x=wall")
    assert status == 200 and _grouping(body) == "tag:team"
    # Ungrouping keeps the runs and the axis and drops the group; another axis keeps the group.
    ungroup = re.search(r'<a href="([^"]+)" id="ungroup">', body)
    assert ungroup is not None
    assert ungroup.group(1) == f"curves.html?run={A}&amp;run={B}&amp;x=wall"
    axis = re.search(r'<a href="([^"]+)" class="axis" data-axis="step">', body)
    assert axis is not None
    assert axis.group(1) == f"curves.html?run={A}&amp;run={B}&amp;x=step&amp;group=tag%3Ateam"
    # Runs sharing the group's value are drawn as one band (A and C are both team red).
    _, body = _page(store, f"/curves.html?run={A}&run={C}&group=tag:team")
    assert "mean ± std of 2 runs" in body
    _, body = _page(store, f"/curves.html?run={A}&run={C}")
    assert "mean ± std of" not in body
    status, body = _page(store, f"/curves.html?{runs}&group=colour")
    assert status == 400 and "cannot group by" in body and "tag:team" in body


def test_compare_without_runs_compares_none(store: Store) -> None:
    status, body = _page(store, "/compare.html")
    assert status == 200 and "Compare 0 runs" in body and 'id="no-runs"' in body
    status, body = _page(store, f"/compare.html?run={A}&run={B}")
    assert status == 200 and "Compare 2 runs" in body and 'id="no-runs"' not in body


def _selected(body: str) -> list[str]:
    return re.findall(r'<option value="([^"]+)" selected>', body)


def test_parallel_coordinates_show_the_metric_asked_for_else_the_first(store: Store) -> None:
    status, body = _page(store, "/parallel.html")
    assert status == 200 and "One line per run (3)" in body
    assert re.findall(r'<option value="([^"]+)"', body) == ["acc", "loss"]
    assert _selected(body) == ["acc"]
    assert _selected(_page(store, "/parallel.html?metric=loss")[1]) == ["loss"]
    assert _selected(_page(store, "/parallel.html?metric=nope")[1]) == ["acc"]


# Static files, logs, errors.


def test_static_files_are_served_with_their_type_and_others_are_not(store: Store) -> None:
    status, kind, body = route(store, "/static/ui.css")
    assert status == 200 and kind == "text/css; charset=utf-8" and body
    status, kind, body = route(store, "/static/ui.js")
    assert status == 200 and kind == "text/javascript; charset=utf-8" and body
    assert route(store, "/static/nope.js")[0] == 404
    assert route(store, "/static/../ui.js")[0] == 404


def test_a_run_without_captured_output_has_no_log_page(store: Store) -> None:
    status, kind, body = route(store, f"/logs/{A}-stdout.txt")
    assert status == 200 and kind.startswith("text/plain") and body == b"hello\n"
    status, body_text = _page(store, f"/logs/{B}-stdout.txt")
    assert status == 404 and "this run has no captured output" in body_text


def test_error_pages_say_what_went_wrong_and_link_back(store: Store) -> None:
    status, body = _page(store, "/nope.html")
    assert status == 404 and "<h1>Not found</h1>" in body and "no page /nope.html" in body
    assert '<a href="curves.html" id="nav-curves">' in body
    status, body = _page(store, "/runs/nope.html")
    assert status == 404 and "<h1>Not found</h1>" in body
    assert '<a href="../curves.html" id="nav-curves">' in body
    status, body = _page(store, f"/curves.html?run={A}&group=colour")
    assert status == 400 and "<h1>Bad request</h1>" in body and "ask for less" in body


def test_every_page_is_served_as_live_not_as_a_static_report(store: Store) -> None:
    for url in (
        "/",
        f"/runs/{A}.html",
        f"/curves.html?run={A}",
        f"/diff/{A}--{B}.html",
        f"/compare.html?run={A}&run={B}",
        "/parallel.html",
        "/nope.html",
    ):
        status, body = _page(store, url)
        assert status in (200, 404) and "static report" not in body, url
        assert status == 200 or url == "/nope.html", (url, body[:300])
    assert 'id="filters"' in _page(store, "/")[1]


# HTTP.


def test_get_states_the_length_and_head_sends_the_headers_alone(port: int) -> None:
    r = _get(port, f"/runs/{A}.html")
    body = r.read()
    assert r.status == 200 and r.getheader("Content-Type") == "text/html; charset=utf-8"
    assert int(r.getheader("Content-Length") or -1) == len(body) > 0
    assert r.getheader("Referrer-Policy") == "no-referrer"
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(f"HEAD /runs/{A}.html HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    head, _, rest = b"".join(chunks).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 200")
    assert f"Content-Length: {len(body)}".encode() in head
    assert rest == b""  # HEAD: no body


def test_a_page_that_fails_is_a_500_and_the_server_keeps_answering(
    port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the page broke")

    monkeypatch.setattr(data, "run_page", broken)
    r = _get(port, f"/runs/{A}.html")
    assert r.status == 500 and r.read() == b"error: the page broke\n"
    r = _get(port, "/")
    assert r.status == 200 and A in r.read().decode()


def test_a_server_bound_beyond_loopback_answers_any_host_name(store: Store) -> None:
    for port in _served(store, "0.0.0.0"):
        r = _get(port, "/", host="ledger.lab.example:8080")
        assert r.status == 200 and A in r.read().decode()


def test_each_request_is_logged_when_a_log_is_given(store: Store) -> None:
    lines: list[str] = []
    for port in _served(store, log=lines.append):
        assert _get(port, "/").status == 200
        assert _get(port, "/nope.html").status == 404
    assert len(lines) == 2
    assert '"GET / HTTP/1.1" 200' in lines[0] and '"GET /nope.html HTTP/1.1" 404' in lines[1]


def _half_request(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())  # no blank line
    return s


def test_stopping_the_server_does_not_wait_for_an_idle_connection(store: Store) -> None:
    server = make_server(store, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    idle = _half_request(server.server_address[1])
    try:
        time.sleep(0.5)  # its handler thread is reading the request
        server.shutdown()
        t0 = time.monotonic()
        server.server_close()
        assert time.monotonic() - t0 < 5  # not the 20 s the idle connection may wait
    finally:
        idle.close()


def test_a_connection_that_goes_quiet_mid_request_is_closed(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server drops a connection that stops sending mid-request. Its 20 seconds are
    shortened here (the value itself: the next test), not waited for on a worker."""
    import ledger.ui.server as server_mod

    monkeypatch.setattr(server_mod, "REQUEST_TIMEOUT", 1.0)
    for port in _served(store):
        with _half_request(port) as s:
            s.settimeout(60)
            t0 = time.monotonic()
            assert s.recv(65536) == b""  # closed by the server, no answer
            assert time.monotonic() - t0 >= 0.9  # by the timeout, not at once


def test_a_quiet_connection_is_given_the_20_seconds_the_docs_say(store: Store) -> None:
    server = make_server(store, "127.0.0.1", 0)
    try:
        assert server.RequestHandlerClass.timeout == 20.0  # docs/how-to/view-runs.md
    finally:
        server.server_close()
