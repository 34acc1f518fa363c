"""The web view shows curation: retracted runs are hidden from the runs page unless the "show
retracted" toggle (``?retracted=1``) is on, and then marked with their reason; the run page of
a retracted run says so and why; curated names and tags are shown, the recorded name beside."""

from __future__ import annotations

import html
import re
import threading
from pathlib import Path

from _support import run_ledger
from _ui_shared import Project
from test_web_view import _get

from ledger.run.curate import rename_run, retract_run, tag_run
from ledger.store import Store
from ledger.ui.server import make_server


def _rows(body: str) -> dict[str, str]:
    """Each run row of the runs table: run id -> the row's HTML."""
    return {
        m.group(2): m.group(0)
        for m in re.finditer(r'<tr class="(run[^"]*)" data-run="([^"]+)">.*?</tr>', body, re.S)
    }


def test_retracted_runs_are_toggled_marked_and_explained(project: Project, tmp_path: Path) -> None:
    repo, ids = project
    store = Store.open(repo / ".ledger")
    gone, kept = ids["seed0"], ids["seed1"]
    retract_run(store, gone, "trained on <the> test split")
    rename_run(store, kept, "seeds-renamed")
    tag_run(store, kept, {"owner": "ana"})
    server = make_server(store, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        status, _, body = _get(port, "/index.html")
        assert status == 200
        rows = _rows(body)
        assert gone not in rows and kept in rows  # hidden by default, as in `ledger ls`
        assert 'id="show-retracted"' in body and "checked" not in _toggle(body)
        assert "seeds-renamed" in rows[kept] and "(recorded as seeds)" in rows[kept]
        assert '<span class="tag">owner=ana</span>' in rows[kept]

        status, _, body = _get(port, "/index.html?retracted=1")
        rows = _rows(body)
        assert gone in rows and kept in rows
        assert 'class="run retracted"' in rows[gone] and "retracted-mark" in rows[gone]
        assert html.escape("trained on <the> test split", quote=True) in rows[gone]
        assert "retracted-mark" not in rows[kept]
        assert "checked" in _toggle(body)
        assert "<the>" not in body  # the reason is escaped

        status, _, page = _get(port, f"/runs/{gone}.html")
        assert status == 200
        banner = re.search(r'<p class="retracted-banner" id="retracted">.*?</p>', page, re.S)
        assert banner is not None and "trained on &lt;the&gt; test split" in banner.group(0)
        status, _, page = _get(port, f"/runs/{kept}.html")
        assert 'id="retracted"' not in page
        assert '<span id="run-name">seeds-renamed</span>' in page
        assert '<span class="muted" id="recorded-name">(recorded as seeds)</span>' in page
        assert '<span class="tag">owner=ana</span>' in page
    finally:
        server.shutdown()
        server.server_close()


def _toggle(body: str) -> str:
    m = re.search(r'<input type="checkbox" name="retracted"[^>]*>', body)
    assert m is not None, "no show-retracted toggle"
    return m.group(0)


def test_a_static_report_marks_a_retracted_run_it_names(project: Project, tmp_path: Path) -> None:
    repo, ids = project
    store = Store.open(repo / ".ledger")
    gone, kept = ids["seed0"], ids["seed1"]
    retract_run(store, gone, "label leak")
    out = tmp_path / "site"
    r = run_ledger("report", gone, kept, "-o", str(out), cwd=repo)
    assert r.returncode == 0, r.stderr
    rows = _rows((out / "index.html").read_text(encoding="utf-8"))
    assert "retracted-mark" in rows[gone] and "label leak" in rows[gone]
    assert "retracted-mark" not in rows[kept]
    page = (out / "runs" / f"{gone}.html").read_text(encoding="utf-8")
    assert 'id="retracted-reason">label leak</span>' in page
