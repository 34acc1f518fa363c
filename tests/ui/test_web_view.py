"""``ledger report`` and ``ledger ui``: the pages, their escaping, and that nothing is written."""

from __future__ import annotations

import hashlib
import http.client
import json
import re
import subprocess
import sys
from pathlib import Path

from _support import run_ledger, subprocess_env
from _ui_shared import HOSTILE, HOSTILE_CONFIG, HOSTILE_LOG

from ledger.store import Store

Project = tuple[Path, dict[str, str]]


def _fingerprint(ledger: Path) -> str:
    """Everything but the index cache: objects, refs, log."""
    h = hashlib.sha256()
    for p in sorted(ledger.rglob("*")):
        if p.is_file() and not p.name.startswith("index.sqlite"):
            h.update(str(p.relative_to(ledger)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def _get(
    port: int, path: str, host: str | None = None, method: str = "GET"
) -> tuple[int, dict[str, str], str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.putrequest(method, path, skip_host=True)
    conn.putheader("Host", host or f"127.0.0.1:{port}")
    conn.endheaders()
    r = conn.getresponse()
    body = r.read().decode("utf-8", errors="replace")
    conn.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, body


def test_report_writes_a_static_escaped_site(project: Project, tmp_path: Path) -> None:
    repo, ids = project
    before = _fingerprint(repo / ".ledger")
    out = tmp_path / "site"
    seeds = [ids["seed0"], ids["seed1"], ids["seed2"]]
    r = run_ledger("report", ids["good"], ids["hostile"], *seeds, "-o", str(out), cwd=repo)
    assert r.returncode == 0, r.stderr
    assert _fingerprint(repo / ".ledger") == before
    names = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    assert {
        "index.html",
        "curves.html",
        "curves-wall.html",
        "static/ui.css",
        "static/ui.js",
    } <= names
    assert f"runs/{ids['replay']}.html" in names  # the replay of a reported run comes along
    assert f"diff/{ids['good']}--{ids['replay']}.html" in names
    assert f"logs/{ids['hostile']}-stdout.txt" in names
    pages = {n: (out / n).read_text(encoding="utf-8") for n in names if n.endswith(".html")}
    for name, html in pages.items():
        # Nothing from outside the folder: no absolute URL in any src or href.
        assert not re.search(r"""(src|href)=["']?(https?:|//)""", html), name
        assert HOSTILE not in html and HOSTILE_CONFIG not in html and "<script>alert" not in html
    index = pages["index.html"]
    assert "&lt;script&gt;alert(&#39;name&#39;)&lt;/script&gt;" in index
    assert index.count('class="run"') == 5
    run = pages[f"runs/{ids['hostile']}.html"]
    assert "&lt;b&gt;step&lt;/b&gt; &lt;/pre&gt;&lt;script&gt;alert(3)" in run
    assert "line 299" in run and "line 50\n" not in run  # the tail only
    assert "&#34;&gt;&lt;img src=x onerror=alert(2)&gt;" in run
    assert (out / f"logs/{ids['hostile']}-stdout.txt").read_text().endswith(HOSTILE_LOG + "\n")
    good = pages[f"runs/{ids['good']}.html"]
    assert ids["replay"] in good and "reproduced" in good
    # The audit whose evidence names the reported seeds is linked and written.
    assert f'href="audits/{ids["audit"]}.html"' in index
    assert "Claim audit" in (out / "audits" / f"{ids['audit']}.html").read_text()
    curves = pages["curves-grouped.html"]
    assert 'class="band"' in curves and "seeds: mean ± std of 3 runs" in curves


def test_report_refuses_bad_arguments(project: Project, tmp_path: Path) -> None:
    repo, ids = project
    r = run_ledger("report", "no-such-run", "-o", str(tmp_path / "s"), cwd=repo)
    assert r.returncode != 0 and "ledger: error: no run 'no-such-run'" in r.stderr
    assert not (tmp_path / "s").exists()
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "thesis.tex").write_text("keep me")
    r = run_ledger("report", ids["good"], "-o", str(busy), cwd=repo)
    assert (
        r.returncode == 2 and "is not a ledger report" in r.stderr and "ledger: hint:" in r.stderr
    )
    assert (busy / "thesis.tex").read_text() == "keep me"
    # An earlier report is replaced whole.
    site = tmp_path / "site"
    assert run_ledger("report", ids["good"], "-o", str(site), cwd=repo).returncode == 0
    assert run_ledger("report", ids["bad"], "-o", str(site), cwd=repo).returncode == 0
    assert not (site / "runs" / f"{ids['good']}.html").exists()


def test_server_pages(served: tuple[int, Project]) -> None:
    port, (repo, ids) = served
    before = _fingerprint(repo / ".ledger")
    status, headers, body = _get(port, "/")
    assert status == 200 and "script-src 'self'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"
    assert body.count('class="run"') == 6  # originals: good, bad, hostile, three seeds
    for path in (
        f"/runs/{ids['good']}.html",
        f"/runs/{ids['hostile']}.html",
        f"/curves.html?run={ids['good']}&run={ids['seed0']}&x=wall",
        f"/diff/{ids['good']}--{ids['replay']}.html",
        f"/logs/{ids['hostile']}-stdout.txt",
        "/static/ui.js",
    ):
        status, headers, body = _get(port, path)
        assert status == 200, (path, body[:300])
        assert HOSTILE not in body or path.startswith("/logs/"), path
    assert f'href="audits/{ids["audit"]}.html"' in _get(port, "/")[2]
    status, headers, body = _get(port, f"/audits/{ids['audit']}.html")
    assert status == 200 and "seeds-loss" in body
    assert "script-src" not in headers["content-security-policy"]  # no script at all
    assert _get(port, "/audits/nope.html")[0] == 404
    status, headers, body = _get(port, f"/logs/{ids['hostile']}-stdout.txt")
    assert headers["content-type"].startswith("text/plain") and body.endswith(HOSTILE_LOG + "\n")
    # Filters: where, status, tag; a bad filter is shown, not a crash.
    status, _, body = _get(port, "/index.html?where=params.lr+%3E+0.05")
    assert status == 200 and body.count('class="run"') == 1 and "&lt;script&gt;" in body
    status, _, body = _get(port, "/index.html?status=failed")
    assert body.count('class="run"') == 1 and ids["bad"] in body
    status, _, body = _get(port, "/index.html?where=colour+%3D+red")
    assert status == 200 and "is not a field" in body
    # Unknown pages and runs, a foreign Host, and writes are refused.
    assert _get(port, "/runs/nope.html")[0] == 404
    assert _get(port, "/../../etc/passwd")[0] == 404
    assert _get(port, "/", host="evil.example:80")[0] == 421
    assert _get(port, "/", method="POST")[0] == 501
    assert _get(port, "/", method="DELETE")[0] == 501
    assert _fingerprint(repo / ".ledger") == before


def test_server_paginates(project: Project) -> None:
    from ledger.ui import server as server_mod

    repo, _ = project
    store = Store.open(repo / ".ledger")
    old = server_mod.PER_PAGE
    server_mod.PER_PAGE = 2
    try:
        first = server_mod.route(store, "/index.html")[2].decode()
        assert first.count('class="run"') == 2 and 'id="next"' in first and 'id="prev"' not in first
        last = server_mod.route(store, "/index.html?page=3")[2].decode()
        assert last.count('class="run"') == 2 and 'id="next"' not in last and 'id="prev"' in last
        assert "page=2" in last
    finally:
        server_mod.PER_PAGE = old


def test_ui_command_binds_loopback_and_prints_its_port(project: Project) -> None:
    repo, _ = project
    proc = subprocess.Popen(
        [sys.executable, "-m", "ledger", "ui"],
        cwd=repo,
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.search(r"http://localhost:(\d+)/", line)
        assert m, line + (proc.stderr.read() if proc.stderr else "")
        status, _, body = _get(int(m.group(1)), "/")
        assert status == 200 and "<table" in body
    finally:
        proc.terminate()
        proc.communicate(timeout=30)  # also closes the pipes
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = run_ledger("ui", "--port", str(taken.getsockname()[1]), cwd=repo)
    assert busy.returncode == 2 and "ledger: error: cannot listen" in busy.stderr
    assert "ledger: hint:" in busy.stderr and "Traceback" not in busy.stderr


def test_json_of_ls_matches_the_table(project: Project) -> None:
    repo, ids = project
    r = run_ledger("ls", "--json", "--where", "params.lr = 0.01", cwd=repo)
    assert r.returncode == 0, r.stderr
    assert len(json.loads(r.stdout)) == 3 and ids["hostile"] not in r.stdout
