"""The docs example runs; text, Markdown and HTML reports; the HTML renders in a real browser.

The browser test needs Debian's chromium (``apt-get install -y chromium``) and is skipped
with that reason when it is absent, except on CI (``CI=true``), where ``.ci/run`` installs it
and its absence fails the test.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from _audit_lab import Lab
from _png import png_rgb
from _support import require_component
from rich.console import Console

from ledger.audit import AuditResult, audit, parse_claims, render_html, render_markdown, render_text

PAGE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "audit-claims.md"
EXAMPLE = re.findall(r"```yaml\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)[0]
CHROMIUM = next(
    (p for p in ("/usr/bin/chromium", shutil.which("chromium")) if p and Path(p).is_file()), None
)

ACC = [76.1 + d for d in (-0.3, -0.25, -0.2, -0.1, -0.05, 0.05, 0.1, 0.2, 0.25, 0.3)]
LOSS = [
    0.912 + d for d in (-0.008, -0.007, -0.006, -0.004, -0.002, 0.002, 0.004, 0.006, 0.007, 0.008)
]


@pytest.fixture
def example(lab: Lab) -> AuditResult:
    """The docs page's claims file against ten runs whose best-val step is step 1."""
    for i, (acc, loss) in enumerate(zip(ACC, LOSS, strict=True)):
        lab.add(
            f"20261130T0600{i:02d}.000000Z-0000{i:04d}",
            {
                "val/acc": [(0, 70.0), (1, 77.0), (2, 76.0)],
                "test/acc": [(0, 69.0), (1, acc), (2, acc - 1.0)],
                "test/loss": [(0, 2.0), (1, 1.0), (2, loss)],
            },
            name="resnet50-cifar",
            tags={"paper": "doe2026"},
        )
    return audit(lab.store, lab.claims(EXAMPLE))


def test_docs_example_is_valid_and_supported(example: AuditResult) -> None:
    assert parse_claims(EXAMPLE.encode()).problems == []
    assert "both claims are **supported**" in PAGE.read_text(encoding="utf-8")
    assert [c.verdict for c in example.claims] == ["supported", "supported"]
    assert example.exit_code == 0
    top1 = example.claims[0]
    assert {e.step for e in top1.runs} == {1}  # best-val picked step 1, not the final step
    assert top1.values == pytest.approx(ACC)


def test_text_and_markdown_reports(example: AuditResult) -> None:
    console = Console(record=True, width=160)
    render_text(example, console)
    text = console.export_text()
    assert "resnet50-top1" in text and "76.1 ± 0.2 (std), n=10" in text
    assert "2 claim(s): 2 supported" in text
    md = render_markdown(example)
    assert md.startswith(f"# Claim audit `{example.id}`")
    assert "| 2 | resnet50-loss | paper Doe et al. 2026, arXiv:2611.00000, table 2, row" in md
    assert "0.912 ± 0.004 (95% CI), n=10" in md
    assert "## 1. resnet50-top1: supported" in md


def test_html_is_self_contained(example: AuditResult) -> None:
    html = render_html(example)
    assert html.count("<svg") == 2
    assert "<script" not in html
    without_ns = html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert re.findall(r"(?:src|href)\s*=|url\(|https?://|@import", without_ns) == []


def _chromium(url: str, shot: Path, profile: Path) -> list[str]:
    """Render ``url``; return the console messages chromium logged."""
    assert CHROMIUM is not None
    proc = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--enable-logging=stderr",
            "--v=0",
            "--hide-scrollbars",
            "--window-size=900,1100",
            f"--screenshot={shot}",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert shot.is_file(), proc.stderr[-2000:]
    return [ln for ln in proc.stderr.splitlines() if ":CONSOLE" in ln or "Uncaught" in ln]


def test_html_report_renders_in_headless_chromium(example: AuditResult, tmp_path: Path) -> None:
    require_component(CHROMIUM, "chromium", "apt-get install -y chromium")
    # The harness itself must notice a broken page, or a clean result would prove nothing.
    broken = tmp_path / "broken.html"
    broken.write_text("<html><body><script>undefinedFunction()</script></body></html>")
    errors = _chromium(broken.as_uri(), tmp_path / "broken.png", tmp_path / "profile-a")
    assert any("Uncaught" in e for e in errors), errors

    page = tmp_path / "audit.html"
    page.write_text(render_html(example), encoding="utf-8")
    shot = Path(os.environ.get("AUDIT_SCREENSHOT", tmp_path / "audit.png"))
    assert _chromium(page.as_uri(), shot, tmp_path / "profile-b") == []
    rgb = png_rgb(shot).astype(np.int32)
    # The plot's supporting band is drawn in #c8ecd0: find it, then look inside it for the
    # run values (dark dots) and the CI bars (orange).
    band = np.all(np.abs(rgb - np.array([200, 236, 208])) <= 3, axis=2)
    assert band.sum() > 2000, "the first plot is not visible in the screenshot"
    ys, xs = np.nonzero(band)
    area = rgb[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]
    dark = np.all(area < 90, axis=2).sum()
    orange = np.all(np.abs(area - np.array([192, 86, 33])) <= 20, axis=2).sum()
    assert dark > 50, "no run values drawn in the plot area"
    assert orange > 20, "no confidence interval drawn in the plot area"
