"""``ledger ui``: the pages served live from a ledger, read-only, on 127.0.0.1 by default.

The standard library's HTTP server: a local viewer for one person does not need a framework.
Each connection is read and answered in its own thread, and a client that sends part of a
request and goes quiet is dropped after ``REQUEST_TIMEOUT`` seconds, so one idle or slow
connection never holds up another; pages are built one at a time (building a page may catch
the index cache up with the log, as ``ledger ls`` does). Only GET and HEAD are answered;
nothing here writes an object, a ref or a log line. Pages are served at the same relative paths
as a static report, so one set of templates serves both. A request must carry exactly one Host
header, and on loopback it must name this server (DNS rebinding); every response forbids
scripts and styles from anywhere but the server itself. Filters and run lists beyond
``MAX_FILTERS`` / ``MAX_RUNS`` are answered 400, before any query is built.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from ..errors import LedgerError
from ..store import Store
from . import data
from .pages import STATIC_FILES, render, static_file

__all__ = ["make_server"]

HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
        "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
STATUSES = ["succeeded", "failed", "killed", "interrupted", "running", "abandoned"]
PER_PAGE = 50
# Seconds a connection may take to send its request (and to take the answer) before it is closed.
REQUEST_TIMEOUT = 20.0
# At most this many runs on one curves page.
MAX_RUNS = 100

_RUN = re.compile(r"^/runs/(?P<id>[^/]+)\.html$")
_LOG = re.compile(r"^/logs/(?P<id>[^/]+)-stdout\.txt$")
_DIFF = re.compile(r"^/diff/(?P<a>[^/]+?)--(?P<b>[^/]+)\.html$")
_AUDIT = re.compile(r"^/audits/(?P<id>[^/]+)\.html$")
# The audit report is one self-contained file with its own inline styles and no script.
AUDIT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'"
_CURVES = re.compile(r"^/curves(?:-(?P<x>step|samples|wall))?(?P<g>-grouped)?\.html$")


class _NotFound(Exception):
    pass


class _BadRequest(Exception):
    pass


def _one(q: dict[str, list[str]], key: str) -> str:
    return (q.get(key) or [""])[0].strip()


def _runs(store: Store, q: dict[str, list[str]]) -> str:
    from ..index.query import MAX_FILTERS, parse_where

    form = {k: _one(q, k) for k in ("name", "status", "tag", "where", "search", "retracted")}
    # The "show retracted" toggle: retracted runs are hidden unless asked for, as in `ls`.
    form["retracted"] = "1" if form["retracted"].lower() in ("1", "on", "true", "yes") else ""
    error = None
    try:
        page = max(1, int(_one(q, "page") or "1"))
    except ValueError:
        page = 1
    tags: dict[str, str] = {}
    if form["tag"]:
        key, sep, value = form["tag"].partition("=")
        if sep and key:
            tags[key] = value
        else:
            error = f"tag {form['tag']!r} is not KEY=VALUE"
    terms = [w for w in form["where"].split(" and ") if w.strip()]
    if len(terms) > MAX_FILTERS:
        raise _BadRequest(
            f"the where filter has {len(terms)} terms joined with 'and'; at most {MAX_FILTERS} "
            "are taken"
        )
    try:
        where = parse_where(terms)
    except LedgerError as e:
        where, error = [], e.message
    search = None
    if form["search"]:
        from ..index.search import Search

        try:
            search = Search(form["search"])
        except LedgerError as e:
            error = f"{e.message}; {e.hint}"
    table = data.runs_table(
        store,
        where=where,
        search=search,
        name=form["name"] or None,
        status=form["status"] if form["status"] in STATUSES else None,
        tags=tags,
        page=page,
        per_page=PER_PAGE,
        retracted=bool(form["retracted"]),
    )

    def page_href(p: int) -> str:
        return "index.html?" + urlencode({**{k: v for k, v in form.items() if v}, "page": p})

    ids = [r["run_id"] for r in table["rows"] if r["linked"]]
    return render(
        "runs.html",
        root="",
        live=True,
        curves_href="curves.html?" + urlencode([("run", r) for r in ids[:10]]),
        form=form,
        statuses=STATUSES,
        error=error,
        page_href=page_href,
        diffs=[],
        audits=data.audits(store) if page == 1 else [],
        **table,
    )


def _wanted(store: Store, q: dict[str, list[str]], page: str, default: int = 10) -> list[str]:
    """The runs ``run=`` names (ids, prefixes, names; also comma-separated), or the newest
    ``default`` when none is named."""
    from ..run.find import resolve_run

    wanted = [r for v in q.get("run", []) for r in v.split(",") if r.strip()]
    if len(wanted) > MAX_RUNS:
        raise _BadRequest(f"{len(wanted)} runs asked for; a {page} page shows at most {MAX_RUNS}")
    ids = list(dict.fromkeys(resolve_run(store, r.strip()) for r in wanted))
    if not ids and default:
        table = data.runs_table(store, per_page=default)
        ids = [r["run_id"] for r in table["rows"] if r["linked"]]
    return ids


def _groupings(store: Store, ids: list[str]) -> list[str]:
    """What a curves page may group by: the name, and each tag key the runs carry."""
    keys = sorted({k for r in ids for k in (data.run_record(store, r).get("tags") or {})})
    return ["name", *(f"tag:{k}" for k in keys)]


def _curves(store: Store, path: re.Match[str], q: dict[str, list[str]]) -> str:
    x = path.group("x") or _one(q, "x") or "step"
    group = "name" if path.group("g") else _one(q, "group")
    group = "name" if group == "1" else group
    ids = _wanted(store, q, "curves")
    groupings = _groupings(store, ids)
    if group and group not in groupings:
        raise _BadRequest(f"cannot group by {group!r}: use one of {', '.join(groupings)}")

    def href(xv: str, g: str | bool) -> str:
        g = "" if g is False else g
        return "curves.html?" + urlencode(
            [("run", r) for r in ids] + [("x", xv)] + ([("group", str(g))] if g else [])
        )

    return render(
        "curves.html",
        root="",
        live=True,
        curves_href=href(x, group),
        charts=data.curves(store, ids, x=x, group_by=group or None),
        runs=ids,
        x=x if x in data.AXES else "step",
        group=group,
        groupings=groupings,
        axis_href=lambda k: href(k, group),
        group_href=lambda g: href(x, g),
    )


def _compare(store: Store, q: dict[str, list[str]]) -> str:
    from .compare import compare_page

    ids = _wanted(store, q, "compare", default=0)
    warnings: list[str] = []
    info = compare_page(store, ids, warnings)
    return render(
        "compare.html",
        root="",
        live=True,
        curves_href="curves.html?" + urlencode([("run", r) for r in ids]),
        warnings=warnings,
        **info,
    )


def _parallel(store: Store, q: dict[str, list[str]]) -> str:
    from .parallel import parallel_page

    ids = _wanted(store, q, "parallel coordinates", default=PER_PAGE)
    warnings: list[str] = []
    info = parallel_page(store, ids, warnings)
    names = [f["metric"] for f in info["figures"]]
    metric = _one(q, "metric")
    return render(
        "parallel.html",
        root="",
        live=True,
        curves_href="curves.html?" + urlencode([("run", r) for r in ids]),
        warnings=warnings,
        metric=metric if metric in names else (names[0] if names else ""),
        **info,
    )


def route(store: Store, url: str) -> tuple[int, str, bytes]:
    """(status, content type, body) for a GET of ``url``."""
    parts = urlsplit(url)
    path, q = parts.path, parse_qs(parts.query)
    html = "text/html; charset=utf-8"
    try:
        if path in ("/", "/index.html"):
            return 200, html, _runs(store, q).encode()
        if path.startswith("/static/") and path[8:] in STATIC_FILES:
            kind = "text/css" if path.endswith(".css") else "text/javascript"
            return 200, kind + "; charset=utf-8", static_file(path[8:])
        if m := _RUN.match(path):
            info = data.run_page(store, m.group("id"))
            body = render(
                "run.html",
                root="../",
                live=True,
                curves_href="../curves.html?" + urlencode({"run": info["run"]["run_id"]}),
                log_lines=data.LOG_TAIL_LINES,
                **info,
            )
            return 200, html, body.encode()
        if m := _LOG.match(path):
            from ..run.find import resolve_run

            text = data.log_text(store, resolve_run(store, m.group("id")))
            if text is None:
                raise _NotFound("this run has no captured output")
            return 200, "text/plain; charset=utf-8", text.encode()
        if m := _DIFF.match(path):
            d = data.diff_page(store, m.group("a"), m.group("b"))
            body = render("diff.html", root="../", live=True, curves_href="../curves.html", d=d)
            return 200, html, body.encode()
        if m := _AUDIT.match(path):
            return (
                200,
                "text/html; charset=utf-8; audit",
                data.audit_html(store, m.group("id")).encode(),
            )
        if m := _CURVES.match(path):
            return 200, html, _curves(store, m, q).encode()
        if path == "/compare.html":
            return 200, html, _compare(store, q).encode()
        if path == "/parallel.html":
            return 200, html, _parallel(store, q).encode()
        raise _NotFound(f"no page {path}")
    except _NotFound as e:
        return _error(404, str(e), None, path)
    except _BadRequest as e:
        return _error(400, str(e), "ask for less: fewer filters or runs", path)
    except LedgerError as e:
        return _error(404, e.message, e.hint, path)


def _error(status: int, message: str, hint: str | None, path: str) -> tuple[int, str, bytes]:
    root = "../" if path.count("/") > 1 else ""
    body = render(
        "error.html",
        root=root,
        live=True,
        curves_href=root + "curves.html",
        status={404: "Not found", 400: "Bad request"}.get(status, "Error"),
        message=message,
        hint=hint,
    )
    return status, "text/html; charset=utf-8", body.encode()


def make_server(
    store: Store, host: str, port: int, log: Callable[[str], Any] | None = None
) -> ThreadingHTTPServer:
    allowed: set[str] = set()
    one_page_at_a_time = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        server_version = "ledger-ui"
        sys_version = ""
        timeout = REQUEST_TIMEOUT  # on the socket: a read or write that stalls ends it

        def _send(self, status: int, kind: str, body: bytes, head: bool = False) -> None:
            self.send_response(status)
            audit = kind.endswith("; audit")
            self.send_header("Content-Type", kind.removesuffix("; audit"))
            self.send_header("Content-Length", str(len(body)))
            for k, v in HEADERS.items():
                self.send_header(k, AUDIT_CSP if audit and k == "Content-Security-Policy" else v)
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def _answer(self, head: bool) -> None:
            hosts = self.headers.get_all("Host") or []
            if len(hosts) > 1:
                # Two Host headers: which one a proxy or a browser acted on is anyone's guess.
                self._send(400, "text/plain; charset=utf-8", b"more than one Host header\n", head)
                return
            if allowed and (hosts[0] if hosts else "") not in allowed:
                self._send(421, "text/plain; charset=utf-8", b"unknown host\n", head)
                return
            try:
                with one_page_at_a_time:
                    status, kind, body = route(store, self.path)
            except Exception as e:  # a page that fails must not stop the server
                status, kind, body = 500, "text/plain; charset=utf-8", f"error: {e}\n".encode()
            self._send(status, kind, body, head)

        def do_GET(self) -> None:
            self._answer(False)

        def do_HEAD(self) -> None:
            self._answer(True)

        def log_message(self, format: str, *args: Any) -> None:
            if log is not None:
                log(format % args)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True  # a connection still open does not keep the process alive
    real = server.server_address[1]
    if host in ("127.0.0.1", "localhost", "::1"):
        # Bound to loopback: only names of loopback may reach it (another name resolving to
        # 127.0.0.1 is a DNS-rebinding page). Bound elsewhere, the user chose to expose it.
        allowed.update(f"{n}:{real}" for n in ("localhost", "127.0.0.1", "[::1]"))
    return server
