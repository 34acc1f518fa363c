"""``ledger report RUN... -o DIR``: the web view's pages as a static, self-contained site.

The folder holds HTML, one CSS and one JS file, and the runs' logs as text: nothing is fetched
from anywhere when it is opened, so it can be attached to a paper or kept as a CI artifact.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

from ..errors import UsageError
from ..run.find import resolve_run
from ..store import Store
from . import compare, data, parallel
from .pages import STATIC_FILES, render, static_file
from .site_folder import write_site

__all__ = ["write_report"]


def _axis_file(x: str, group: str = "", groupings: Sequence[str] = ()) -> str:
    """The file of the curves page on axis ``x`` grouped by ``group`` ("" none, "name",
    "tag:KEY"): tag keys are user text, so their pages are numbered, not named."""
    base = "curves" if x == "step" else f"curves-{x}"
    if not group:
        return f"{base}.html"
    if group == "name":
        return f"{base}-grouped.html"
    return f"{base}-tag{list(groupings).index(group)}.html"


def every_run(store: Store) -> list[str]:
    """Every original run, newest first (replays come with their originals' pages)."""
    from ..run.find import list_runs

    rows = list_runs(store, limit=1_000_000)
    return [r["run_id"] for r in rows]


def write_report(store: Store, runs: Sequence[str] | None, out: Path) -> list[Path]:
    """Write the site into ``out``: a new or empty folder, or one an earlier report filled and
    nobody changed since (``site_folder``: any other folder is refused, untouched). ``runs``:
    ids, prefixes or names; None or empty: every run. Returns the files written."""
    if not runs:
        runs = every_run(store)
        if not runs:
            raise UsageError("the ledger has no runs to report", hint="record a run first")
    ids = list(dict.fromkeys(resolve_run(store, r) for r in runs))
    for rid in ids:
        if not data.SAFE_ID.match(rid):
            raise UsageError(f"run id {rid!r} cannot be a file name", hint="report other runs")
    # The site's marker (.ledger-site.json) tells code capture it is ledger's output: a report
    # is a look at the ledger and writes nothing into it (ledger.store.made).
    return write_site(out, lambda folder: _write(store, ids, folder), what="report")


def _write(store: Store, ids: list[str], root: Path) -> list[Path]:
    written: list[Path] = []

    def put(rel: str, text: str) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)

    (root / "static").mkdir()
    for name in STATIC_FILES:
        (root / "static" / name).write_bytes(static_file(name))
    table = data.runs_table(store, only=ids)
    # Replays of the reported runs are reported too: their pages are linked from the originals.
    pairs: list[tuple[str, str]] = []
    all_ids = list(ids)
    for rid in ids:
        info = data.run_page(store, rid)
        for r in info["replays"]:
            if data.SAFE_ID.match(r["run_id"]):
                pairs.append((rid, r["run_id"]))
                if r["run_id"] not in all_ids:
                    all_ids.append(r["run_id"])
    pairs += [(a, b) for a, b in itertools.pairwise(ids) if (a, b) not in pairs]
    reported_audits = data.audits(store, runs=all_ids)
    for audit in reported_audits:
        put(f"audits/{audit['audit_id']}.html", data.audit_html(store, audit["audit_id"]))
    put(
        "index.html",
        render(
            "runs.html",
            root="",
            live=False,
            curves_href="curves.html",
            form={},
            statuses=[],
            error=None,
            page_href=lambda p: "",
            diffs=pairs,
            audits=reported_audits,
            **table,
        ),
    )
    for rid in all_ids:
        info = data.run_page(store, rid)
        put(
            f"runs/{rid}.html",
            render(
                "run.html",
                root="../",
                live=False,
                curves_href="../curves.html",
                log_lines=data.LOG_TAIL_LINES,
                **info,
            ),
        )
        text = data.log_text(store, rid)
        if text is not None:
            put(f"logs/{rid}-stdout.txt", text)
    groupings = ["name", *(f"tag:{k}" for k in table["tag_keys"])]
    for x in data.AXES:
        for group in ["", *groupings]:
            put(
                _axis_file(x, group, groupings),
                render(
                    "curves.html",
                    root="",
                    live=False,
                    curves_href="curves.html",
                    charts=data.curves(store, ids, x=x, group_by=group or None),
                    runs=ids,
                    x=x,
                    group=group,
                    groupings=groupings,
                    axis_href=lambda k, g=group: _axis_file(k, g, groupings),
                    group_href=lambda g, x=x: _axis_file(x, g or "", groupings),
                ),
            )
    # One compare page and one parallel-coordinates page over every reported run; ticking
    # runs on the index opens them with ?run=..., and ui.js shows only those.
    warnings: list[str] = []
    compared = ids[: compare.MAX_COMPARED]
    put(
        "compare.html",
        render(
            "compare.html",
            root="",
            live=False,
            curves_href="curves.html",
            **compare.compare_page(store, compared, warnings),
        ),
    )
    pc = parallel.parallel_page(store, ids, warnings)
    put(
        "parallel.html",
        render(
            "parallel.html",
            root="",
            live=False,
            curves_href="curves.html",
            metric=pc["figures"][0]["metric"] if pc["figures"] else "",
            **pc,
        ),
    )
    for a, b in pairs:
        put(
            f"diff/{a}--{b}.html",
            render(
                "diff.html",
                root="../",
                live=False,
                curves_href="../curves.html",
                d=data.diff_page(store, a, b),
            ),
        )
    return written
