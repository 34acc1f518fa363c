"""The audit report links the localization of a replay that failed: a traced run, replayed
with another optimizer eps (the real recorder and replay), audited by the real CLI; the HTML
and Markdown reports link the replay's cell to a section holding where it diverged, and the
web view's audit page links the diff page that draws the module tree."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

PROGRAM = """
import os
import torch
from torch import nn
import ledger
from ledger.torch import trace

ledger.seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
opt = torch.optim.Adam(model.parameters(), lr=0.01, eps=float(os.environ.get("EPS", "1e-8")))
x, y = torch.randn(16, 4), torch.randn(16, 1)
tr = trace(model, opt, every=1, values=1024)
for step in range(3):
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    ledger.log(step=step, loss=loss.item())
"""
CLAIMS = """
claims:
  - id: low-loss
    metric: loss
    higher_is_better: false
    split: val
    below: 100
    runs: {names: [traced]}
"""
LINE = "localized: step 0: gradients identical, parameters differ after the step (eps 1e-08 vs"


def test_the_audit_report_links_where_a_failed_replay_diverged(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text(PROGRAM)
    (root / "claims.yaml").write_text(CLAIMS)
    (root / ".gitignore").write_text(".ledger/\n*.html\n*.md\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e")
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env)
    init_ledger(root)
    r = run_ledger(
        "record", "--name", "traced", "--json", "--", sys.executable, "train.py", cwd=root
    )
    assert r.returncode == 0, r.stderr
    run_id = json.loads(r.stderr.strip().splitlines()[-1])["run_id"]
    r = run_ledger("replay", run_id, "--json", cwd=root, EPS="1e-6")
    assert r.returncode == 1, r.stderr
    verdict = json.loads(r.stdout[r.stdout.index("{\n") :])
    replay_id = verdict["replays"][0]

    r = run_ledger("audit", "claims.yaml", "--html", "a.html", "--markdown", "a.md", cwd=root)
    assert r.returncode == 1, r.stdout + r.stderr  # the run behind the claim did not reproduce
    anchor = f"localization-{run_id}"

    html = (root / "a.html").read_text()
    cell = re.search(r"<td>not-reproduced \(bitwise\)[^<]*(<a [^>]*>[^<]*</a>)</td>", html)
    assert cell is not None and cell.group(1) == f'<a href="#{anchor}">where it diverged</a>'
    section = html[html.index(f'<div id="{anchor}">') :]
    section = section[: section.index("</div>")]
    assert f"<h3>run <code>{run_id}</code>, replay <code>{replay_id}</code></h3>" in section
    assert f"<p>{LINE}" in section
    assert "<p>next: compare the optimizer&#x27;s settings" in section
    assert f"<code>ledger diff {run_id} {replay_id}</code>" in section

    md = (root / "a.md").read_text()
    assert f"[where it diverged](#{anchor})" in md
    part = md[md.index(f'<a id="{anchor}"></a>') :]
    assert f"### run `{run_id}`, replay `{replay_id}`" in part
    assert f"- {LINE}" in part and f"`ledger diff {run_id} {replay_id}`" in part

    # The web view's audit page (audits/<id>.html) links the diff page, which draws the chain.
    from ledger.store import Store
    from ledger.ui import data
    from ledger.ui.pages import render

    store = Store.open(root / ".ledger")
    (audit,) = data.audits(store)
    page = data.audit_html(store, audit["audit_id"])
    href = f"../diff/{run_id}--{replay_id}.html#localization"
    assert f'<a href="{href}">the traces of {run_id} and {replay_id} side by side' in page
    diff = render(
        "diff.html",
        root="../",
        live=False,
        curves_href="",
        d=data.diff_page(store, run_id, replay_id),
    )
    assert f'<p id="localization">{LINE[len("localized: ") :]}' in diff
    # The run pages of the original and of its replay draw the same chain (with the module
    # tree when a module is to blame: an optimizer cause has none) and link the diff page.
    for rid in (run_id, replay_id):
        page = render(
            "run.html",
            root="../",
            live=False,
            curves_href="../curves.html",
            log_lines=data.LOG_TAIL_LINES,
            **data.run_page(store, rid),
        )
        assert f'<p id="localization">{LINE[len("localized: ") :]}' in page, rid
        assert '<p id="localization-next">Next: compare the optimizer' in page
        link = f'<a href="../diff/{run_id}--{replay_id}.html#localization">'
        assert f'<p id="localization-diff">{link}the traces side by side</a></p>' in page
