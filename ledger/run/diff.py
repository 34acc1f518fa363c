"""``ledger diff``: what differs between two runs' contracts, and where their metrics part."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._units import LINE_MAX, one_line
from ..records.base import record_from_json
from ..records.contract import Contract
from ..records.run import Run
from ..store import Store
from .find import load_run

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["diff_runs", "render_diff"]

MAX_PATCH = 200_000


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    else:
        out[prefix] = value
    return out


def _code_patch(store: Store, a: Contract, b: Contract) -> str:
    """The source changes between the two runs' code, as ``git diff`` shows them."""
    if a.code_digest == b.code_digest:
        return ""
    from ..capture.codediff import code_patch

    return code_patch(store, a.code, b.code, max_chars=MAX_PATCH)


def _seed_roots(run: Run) -> list[Any]:
    seeds = (run.runtime or {}).get("seeds") or []
    return [s.get("root") for s in seeds if isinstance(s, dict)]


def diff_runs(store: Store, a_text: str, b_text: str) -> dict[str, Any]:
    from ..capture.env import compare_environments
    from ..records.env import Environment
    from ..stats import compare_series
    from .series import run_series

    _, ra = load_run(store, a_text)
    _, rb = load_run(store, b_text)
    if ra.contract is None or rb.contract is None:
        return _diff_imported(store, ra, rb)
    ca = record_from_json(store.get_json(ra.contract), Contract)
    cb = record_from_json(store.get_json(rb.contract), Contract)
    result: dict[str, Any] = {"a": ra.run_id, "b": rb.run_id}
    same_argv = (ca.argv, ca.argv_b64) == (cb.argv, cb.argv_b64)  # also bytes that are not UTF-8
    result["argv"] = None if same_argv else {"a": ca.argv, "b": cb.argv}
    result["code"] = {"same": ca.code_digest == cb.code_digest, "patch": _code_patch(store, ca, cb)}
    result["config"] = _config_diff(store, ra, rb)
    ia = {i["path"]: i["digest"] for i in ca.inputs}
    ib = {i["path"]: i["digest"] for i in cb.inputs}
    result["data"] = [
        {"input": p, "a": ia.get(p), "b": ib.get(p)}
        for p in sorted(ia.keys() | ib.keys())
        if ia.get(p) != ib.get(p)
    ]
    ea = record_from_json(store.get_json(ca.environment), Environment)
    eb = record_from_json(store.get_json(cb.environment), Environment)
    result["environment"] = [d.model_dump(mode="json") for d in compare_environments(ea, eb)]
    sa, sb = _seed_roots(ra), _seed_roots(rb)
    result["seeds"] = None if sa == sb else {"a": sa, "b": sb}
    result["metrics"] = compare_series(run_series(store, ra), run_series(store, rb)).to_json()
    result["identical_contract"] = ra.contract_digest == rb.contract_digest
    return result


def _config_diff(store: Store, ra: Run, rb: Run) -> list[dict[str, Any]]:
    def resolved(run: Run) -> dict[str, Any]:
        if run.resolved_config is None:
            return {}
        value = store.get_json(run.resolved_config)
        return _flatten(value.get("resolved", {})) if isinstance(value, dict) else {}

    fa, fb = resolved(ra), resolved(rb)
    return [
        {"key": k, "a": fa.get(k), "b": fb.get(k)}
        for k in sorted(fa.keys() | fb.keys())
        if fa.get(k) != fb.get(k)
    ]


def _diff_imported(store: Store, ra: Run, rb: Run) -> dict[str, Any]:
    """A run imported from another tracker has no contract: compare what it has (config,
    seeds, metrics) and leave code, data and environment unknown (``None``)."""
    from ..stats import compare_series
    from .series import run_series

    sa, sb = _seed_roots(ra), _seed_roots(rb)
    return {
        "a": ra.run_id,
        "b": rb.run_id,
        "argv": None,
        "code": None,
        "config": _config_diff(store, ra, rb),
        "data": None,
        "environment": None,
        "seeds": None if sa == sb else {"a": sa, "b": sb},
        "metrics": compare_series(run_series(store, ra), run_series(store, rb)).to_json(),
        "identical_contract": False,
        "imported": [r.run_id for r in (ra, rb) if r.imported is not None],
    }


def _shown(value: Any) -> str:
    """A value of either run on one line: ``repr`` (strings quoted), escaped and cut."""
    return one_line(repr(value), LINE_MAX)


def render_diff(d: dict[str, Any], con: Console) -> None:
    con.print(f"[bold]diff {d['a']} → {d['b']}[/]")
    if d["identical_contract"]:
        con.print("contracts are identical (same code, config, data, environment, seeds)")
    for run_id in d.get("imported") or []:
        con.print(
            f"{run_id} was imported (no contract): code, data and environment are not compared",
            markup=False,
        )
    if d["argv"]:
        a, b = (one_line(" ".join(d["argv"][k]), LINE_MAX) for k in ("a", "b"))
        con.print(f"command: {a}  →  {b}", markup=False)
    if d["code"] is not None and not d["code"]["same"]:
        con.print("[bold]code[/] differs:")
        con.print(d["code"]["patch"], markup=False, highlight=False)
    for c in d["config"]:
        key = one_line(str(c["key"]))
        con.print(f"config  {key}: {_shown(c['a'])} → {_shown(c['b'])}", markup=False)
    for c in d["data"] or []:
        a, b = (one_line(str(c[k] or "(not an input)"), LINE_MAX) for k in ("a", "b"))
        con.print(f"data    {one_line(str(c['input']), LINE_MAX)}: {a} → {b}", markup=False)
    for e in d["environment"] or []:
        con.print(
            f"env     {one_line(str(e.get('field')))}: "
            f"{_shown(e.get('original'))} → {_shown(e.get('current'))}",
            markup=False,
        )
    if d["seeds"]:
        con.print(f"seeds   {d['seeds']['a']} → {d['seeds']['b']}", markup=False)
    fd = (d["metrics"] or {}).get("first_divergence")
    if fd:
        con.print(
            f"metrics first diverge at {one_line(str(fd['metric']))} step {fd['step']}: "
            f"{fd['original']!r} → {fd['replay']!r}",
            markup=False,
        )
    elif (d["metrics"] or {}).get("ok"):
        con.print("metrics: no divergence")
