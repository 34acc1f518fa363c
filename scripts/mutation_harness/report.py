"""One module's results (saved after every mutant) and the Markdown table of all of them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .cache import _load_json, _write_json
from .targets import EQUIVALENT, MODULES

if TYPE_CHECKING:
    from .run import Options


def _outcome(module: str, r: dict[str, Any]) -> str:
    """A survivor listed in EQUIVALENT counts as equivalent (the cache keeps the raw outcome)."""
    if r["outcome"] == "survived" and (module, r["source"], r["mutation"]) in EQUIVALENT:
        return "equivalent"
    return str(r["outcome"])


def _save(
    module: str,
    tests: list[str],
    results: list[dict[str, Any]],
    saved_path: Path,
    opts: Options,
    *,
    final: bool,
    base_s: float,
) -> dict[str, Any]:
    """Write the results so far (after every mutant: an interrupted run keeps its work)."""
    for r in results:
        r["outcome"] = _outcome(module, r)
    count = {k: sum(r["outcome"] == k for r in results) for k in ("equivalent", "not-run")}
    killed = sum(str(r["outcome"]).startswith("killed") for r in results)
    survived = [r for r in results if r["outcome"] == "survived"]
    scored = killed + len(survived)
    summary = {
        "module": module,
        "tests": tests,
        "complete": final and not count["not-run"],
        "selection": opts.select,
        "mutants": len(results),
        "killed": killed,
        "equivalent": count["equivalent"],
        "survived": len(survived),
        "not_run": count["not-run"],
        "uncovered": sum(r.get("why") == "uncovered" for r in survived),
        # kills that only the run of every mapped test found, after the selected tests passed
        "selection_missed": sum(bool(r.get("missed")) for r in results),
        "score": round(100 * killed / scored, 1) if scored else 100.0,
        # what a cold run costs: the baseline (coverage) pass plus every mutant's own time
        "cold_seconds": round(base_s + sum(float(r["seconds"]) for r in results), 1),
        "survivors": [
            {"line": r["line"], "source": r["source"], "mutation": r["mutation"], "why": r["why"]}
            for r in survived
        ],
        "results": results,
    }
    _write_json(saved_path, summary)
    if final:
        print(
            f"{module}: {killed} killed, {count['equivalent']} equivalent, {len(survived)} "
            f"survived, {count['not-run']} not run: score {summary['score']}%"
        )
    return summary


def report(out_dir: Path) -> None:
    print("| module | mutants | killed | equivalent | survived | not run | score | cold run |")
    print("|---|---|---|---|---|---|---|---|")
    loaded = [_load_json(p) for p in sorted(out_dir.glob("*.json"))]
    loaded = [r for r in loaded if r.get("module") in MODULES]
    for r in loaded:
        print(
            f"| `{r['module']}` | {r['mutants']} | {r['killed']} | {r['equivalent']} "
            f"| {r['survived']} | {r.get('not_run', 0)} | {r['score']}% "
            f"| {float(r.get('cold_seconds', 0)) / 60:.1f} min |"
        )
    total = sum(float(r.get("cold_seconds", 0)) for r in loaded)
    print(f"\ncold run of these modules: {total / 60:.1f} min (sum of the measured times)")
    for r in loaded:
        for x in r["results"]:
            if _outcome(r["module"], x) == "equivalent":
                reason = EQUIVALENT[(r["module"], x["source"], x["mutation"])]
                print(f"- equivalent `{r['module']}:{x['line']}` {x['mutation']}: {reason}")
        for x in r["survivors"]:
            tag = " (no test covers it)" if x.get("why") == "uncovered" else ""
            print(f"- SURVIVED `{r['module']}:{x['line']}` {x['mutation']}{tag}")
