"""Comparing runs in a real browser (#39 point 4): headless Chromium loads the pages of
``ledger ui`` and of a ``ledger report`` site, its DOM is checked after ui.js ran, and each page
is screenshotted into the test's folder (``LEDGER_UI_SCREENSHOTS=DIR`` keeps them: the docs'
images of compare and parallel coordinates come from there).

Ticked runs -> compare (curves overlaid in distinct colours, legend "name · short id · kind",
config diff, metric summary side by side); groups by name or tag drawn as mean ± std;
parallel coordinates of config against a chosen metric; a column picker that starts with empty
columns hidden; human durations; replays labelled by kind; ``ledger report -o DIR`` with no run
reports every run.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
from _support import run_ledger
from _ui_lab import add_run
from _ui_shared import Project
from test_browser import _load, _needs_chromium  # noqa: F401  (autouse: skip without chromium)

from ledger.store import Store
from ledger.ui.labels import replay_kinds

ARCH = {
    "20261130T070000.000000Z-0000a001": ("wide", 0.1, [(0, 2.0), (1, 1.0), (2, 0.50)]),
    "20261130T070100.000000Z-0000a002": ("wide", 0.1, [(0, 2.0), (1, 1.1), (2, 0.60)]),
    "20261130T070200.000000Z-0000a003": ("deep", 0.03, [(0, 2.2), (1, 1.6), (2, 1.20)]),
    "20261130T070300.000000Z-0000a004": ("deep", 0.03, [(0, 2.2), (1, 1.4), (2, 1.00)]),
}


@pytest.fixture
def lab(project: Project) -> Project:
    """Four runs of two architectures (a tag), two seeds each, with config that varies."""
    repo, ids = project
    store = Store.open(repo / ".ledger")
    for i, (rid, (arch, lr, loss)) in enumerate(ARCH.items()):
        add_run(
            store,
            rid,
            {"loss": loss, "acc": [(2, 0.5 + i / 10)]},
            name=f"{arch}-net",
            tags={"arch": arch},
            config={"lr": lr, "layers": 4 if arch == "wide" else 12, "seed": i},
            minute=60 + i,
        )
    return repo, ids


def _chart(dom: str, metric: str) -> str:
    found = re.findall(rf'<figure class="chart-box" data-metric="{metric}".*?</figure>', dom, re.S)
    assert len(found) == 1, metric
    return found[0]


def test_ticked_runs_compare_side_by_side(
    lab: Project, served: tuple[int, Project], tmp_path: Path
) -> None:
    port, _ = served
    base = f"http://127.0.0.1:{port}"
    dom = _load(f"{base}/", tmp_path, "view-runs-picker.png")
    # Every run has a tick box in the compare form, which goes to compare.html.
    assert re.search(r'<form[^>]*action="compare.html"[^>]*id="compare-form"', dom)
    ticks = re.findall(
        r'<input type="checkbox" class="pick" name="run" value="([^"]+)" form="compare-form"', dom
    )
    assert set(ARCH) <= set(ticks)
    # At 1280 pixels the table fits the window (no sideways scroll), and the tags and the
    # replay verdict are on screen: config or metric columns went first, if any had to.
    assert re.search(r'<table id="runs" class="sortable" data-fits="yes">', dom)
    for key in ("tags", "verdict"):
        assert re.search(rf'<th data-col="{key}">', dom), key
    # Human durations, not seconds: the lab's runs took 90 s.
    assert ">1 min 30 s<" in dom and ">90.0<" not in dom

    a, b, c = list(ARCH)[:3]
    dom = _load(f"{base}/compare.html?run={a}&run={b}&run={c}", tmp_path, "view-compare.png")
    loss = _chart(dom, "loss")
    strokes = re.findall(r'<path class="series"[^>]*stroke="(#[0-9a-f]{6})"', loss)
    assert len(strokes) == 3 and len(set(strokes)) == 3  # overlaid, one colour each
    legend = [
        html.unescape(re.sub(r"<[^>]+>", "", li)).strip()
        for li in re.findall(r"<li(?:\s[^>]*)?>.*?</li>", loss, re.S)
    ]
    assert len(legend) == 3, legend
    for item, rid in zip(legend, (a, b, c), strict=True):
        name, short, kind = item.split(" · ")
        assert name == ARCH[rid][0] + "-net" and short in rid
        assert kind == "original"
    # The config keys that differ come first, marked; the metric summary has a column per run.
    diff = re.findall(r'<tr class="param (differs|same)"><th>([^<]+)</th>', dom)
    assert diff[:3] == [("differs", "layers"), ("differs", "lr"), ("differs", "seed")], diff
    summary = re.search(r'<table id="metric-summary">.*?</table>', dom, re.S)
    assert summary is not None
    assert len(re.findall(r'<th data-run="', summary.group())) == 3
    assert (
        "last <strong>0.5</strong>" in summary.group()
        and "last <strong>1.2</strong>" in summary.group()
    )


def test_groups_by_tag_as_mean_and_std_band(
    lab: Project, served: tuple[int, Project], tmp_path: Path
) -> None:
    port, _ = served
    runs = "&".join(f"run={r}" for r in ARCH)
    dom = _load(
        f"http://127.0.0.1:{port}/curves.html?{runs}&group=tag:arch", tmp_path, "view-groups.png"
    )
    loss = _chart(dom, "loss")
    assert loss.count('class="band"') == 2 and loss.count('class="series mean"') == 2
    assert "arch=wide: mean ± std of 2 runs" in html.unescape(loss)
    assert 'id="group"' in dom  # and by name, the other grouping on offer


def test_a_band_is_mean_plus_minus_one_std() -> None:
    from ledger.ui.data import _band

    band = _band("wide", [("a", [(2.0, 0.5)]), ("b", [(2.0, 0.6)]), ("c", [(3.0, 1.0)])], "#000")
    assert band.mean == pytest.approx([0.55, 1.0])
    # std with n - 1 of 0.5 and 0.6 is 0.0707 (min..max would give 0.5 .. 0.6)
    assert band.lo == pytest.approx([0.55 - 0.070711, 1.0], abs=1e-6)
    assert band.hi == pytest.approx([0.55 + 0.070711, 1.0], abs=1e-6)


def test_parallel_coordinates_of_config_against_a_metric(
    lab: Project, served: tuple[int, Project], tmp_path: Path
) -> None:
    port, _ = served
    runs = "&".join(f"run={r}" for r in ARCH)
    dom = _load(
        f"http://127.0.0.1:{port}/parallel.html?{runs}&metric=loss", tmp_path, "view-parallel.png"
    )
    figures = re.findall(r'<figure class="pc-box[^"]*" data-metric="([^"]+)"', dom)
    assert sorted(figures) == ["acc", "loss"]
    shown = re.search(r'<figure class="pc-box" data-metric="loss">.*?</figure>', dom, re.S)
    assert shown is not None  # the chosen metric's figure; acc's is hidden
    assert re.search(r'<figure class="pc-box hidden" data-metric="acc">', dom)
    lines = re.findall(r'<polyline class="run-line" data-run="([^"]+)"', shown.group())
    assert sorted(lines) == sorted(ARCH)
    axes = re.findall(r'<g class="(axis|axis metric-axis)" data-axis="([^"]+)"', shown.group())
    assert axes == [
        ("axis", "layers"),
        ("axis", "lr"),
        ("axis", "seed"),
        ("axis metric-axis", "loss"),
    ]


def test_replays_are_labelled_by_kind(
    project: Project, served: tuple[int, Project], tmp_path: Path
) -> None:
    port, (_, ids) = served
    dom = _load(f"http://127.0.0.1:{port}/runs/{ids['good']}.html", tmp_path, "view-run-kinds.png")
    legend = html.unescape(" ".join(re.findall(r'<ul class="legend">.*?</ul>', dom, re.S)))
    assert " · original" in legend and " · bitwise" in legend and "baseline (" not in legend
    assert '<span class="replay-kind">bitwise</span>' in dom
    # Seeds and tolerance replays, from their verdicts: "seed N" (the replay's seed root).
    kinds = replay_kinds(
        [
            {"mode": "tolerance", "replays": ["t1"]},
            {"mode": "seeds", "replays": ["s1", "s2"]},
        ],
        {"s1": {"runtime": {"seeds": [{"root": 7}]}}, "s2": {}},
    )
    assert kinds == {"t1": "tolerance", "s1": "seed 7", "s2": "seed 2"}


def test_report_without_runs_reports_every_run(lab: Project, tmp_path: Path) -> None:
    repo, _ = lab
    site = tmp_path / "site"
    r = run_ledger("report", "-o", str(site), cwd=repo)
    assert r.returncode == 0, r.stderr
    listed = run_ledger("ls", "--json", "--limit", "1000", cwd=repo)
    originals = {row["run_id"] for row in json.loads(listed.stdout)}
    dom = _load((site / "index.html").as_uri(), tmp_path, "report-all.png")
    assert set(re.findall(r'<tr class="run" data-run="([^"]+)"', dom)) == originals
    a, b = list(ARCH)[:2]
    dom = _load(
        (site / "compare.html").as_uri() + f"?run={a}&run={b}", tmp_path, "report-compare.png"
    )
    assert 'data-shown="2"' in dom
    loss = _chart(dom, "loss")
    # Every reported run is in the page; ui.js hid those not ticked.
    shown = re.findall(r'<path class="series" data-label="[^"]*" data-run="([^"]+)"', loss)
    hidden = re.findall(r'<path class="series hidden" data-label="[^"]*" data-run="([^"]+)"', loss)
    assert set(shown) == {a, b} and len(hidden) >= 3, (shown, hidden)
    assert (site / "parallel.html").is_file()


def test_column_picker_hides_empty_columns(project: Project, tmp_path: Path) -> None:
    repo, ids = project
    site = tmp_path / "site"
    seeds = [ids[f"seed{i}"] for i in range(3)]
    r = run_ledger("report", *seeds, "-o", str(site), cwd=repo)
    assert r.returncode == 0, r.stderr
    dom = _load((site / "index.html").as_uri(), tmp_path, "report-columns.png")
    # No tags, no verdicts among these runs: their columns start hidden, and the picker says
    # why; the columns with values start shown.
    for key in ("tags", "verdict"):
        assert re.search(rf'<th data-col="{key}" class="col-off">', dom), key
        toggle = rf'<input type="checkbox" class="col-toggle" data-col="{key}"> [^<]*'
        assert re.search(toggle + r'<span class="muted">\(empty\)</span>', dom), key
    assert re.search(
        r'<input type="checkbox" class="col-toggle" data-col="p-params.seed" checked="">', dom
    )
    assert re.search(r'<th data-col="p-params.seed">seed</th>', dom)
