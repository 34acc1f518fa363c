"""Where two traced runs first diverged: step, rank, phase, module, operation, and why.

Both runs must have traces (``ledger.torch.trace``). The rules, in order:

1. the first step traced in both runs where anything differs; at that step, the rank whose
   difference comes first in the order below (then the lowest rank);
2. within the step: the batch (data), the forward pass (modules in order of completion), the
   loss, the backward pass (gradients in backward's order), the optimizer's step (its
   hyperparameters, then the parameters after it). The RNG states at the start of the step
   are said beside the culprit when they differ (a module that drew from torch's generator
   is then put down to the random state), never as the culprit: Python's own generator is
   seeded from the OS at start-up, and differs in every run that does not seed it;
3. in the forward pass, the first module whose output differs: if its inputs are identical
   it is the culprit (named with its class, the operation kind when it is a leaf); if they
   differ, every module before it matched, so the change came from code between modules.

A forward or backward culprit is an operation that gave other bits on the same inputs: the
thread count or the torch version the traces recorded, if they differ, is named as the
cause, else the operation is called not deterministic here. max |Δ| and the count of
differing values are given where both traces kept the values (``values=N``); digests alone
cannot give them, and the line says so.
"""

from __future__ import annotations

import base64
from typing import Any

from ..records.run import Run
from ..store import Store
from .localize_causes import suggestion

__all__ = ["load_traces", "localize", "localize_pair", "localize_runs", "render_localization"]

_SHOWN_IDS = 6
PHASES = ("data", "forward", "loss", "backward", "optimizer")


def load_traces(store: Store, run: Run) -> dict[int, dict[str, Any]]:
    """rank -> ``{"header", "steps"}`` of the run's traces (empty when it has none)."""
    refs = (run.runtime or {}).get("traces") or []
    out: dict[int, dict[str, Any]] = {}
    for ref in refs:
        value = store.get_json(ref["trace"])
        if isinstance(value, dict) and isinstance(value.get("steps"), list):
            out[int(ref["rank"])] = value
    return out


def localize_runs(store: Store, a: Run, b: Run) -> dict[str, Any] | None:
    """The localization of ``b`` against ``a``; None when either run has no trace."""
    ta, tb = load_traces(store, a), load_traces(store, b)
    if not ta or not tb:
        return None
    return localize(ta, tb)


def localize_pair(store: Store, a_text: str, b_text: str) -> dict[str, Any] | None:
    """``localize_runs`` for two run ids (or unique prefixes), as ``ledger diff`` takes them."""
    from ..run.find import load_run

    return localize_runs(store, load_run(store, a_text)[1], load_run(store, b_text)[1])


def localize(
    a: dict[int, dict[str, Any]], b: dict[int, dict[str, Any]], *, offset: int = 0
) -> dict[str, Any]:
    """Compare two runs' traces (rank -> ``{"header", "steps"}``); see the module doc.

    ``offset`` is added to every step the result names: a trace counts its steps from 0, the
    first step it saw, and a pass resumed from a checkpoint starts after the original's step
    (``localize_resume``). ``trace_step`` keeps the trace's own count."""
    ranks = sorted(a.keys() & b.keys())
    multi = len(a.keys() | b.keys()) > 1
    for r in ranks:
        why = _not_comparable(a[r]["header"], b[r]["header"])
        if why:
            return {"found": False, "comparable": False, "line": why}
    steps_a = {r: {s["s"]: s for s in a[r]["steps"]} for r in ranks}
    steps_b = {r: {s["s"]: s for s in b[r]["steps"]} for r in ranks}
    common = sorted({s for r in ranks for s in steps_a[r].keys() & steps_b[r].keys()})
    for step in common:
        hits = []
        for r in ranks:
            sa, sb = steps_a[r].get(step), steps_b[r].get(step)
            if sa is not None and sb is not None:
                found = _first_difference(a[r]["header"], b[r]["header"], sa, sb)
                if found is not None:
                    hits.append((PHASES.index(found["phase"]), r, found))
        if hits:
            # The rank whose difference comes earliest in the step: the others may only have
            # received it (a gradient all-reduce carries one rank's change to every rank).
            _, r, found = min(hits, key=lambda h: h[:2])
            found["trace_step"] = step
            return _finish(found, step + offset, r if multi else None, len(common))
    if not common:
        return {"found": False, "comparable": False, "line": "no step was traced in both runs"}
    missing = sorted((a.keys() | b.keys()) - set(ranks))
    extra = f"; rank(s) {missing} traced in one run only" if missing else ""
    rng = sorted(
        {
            g
            for r in ranks
            for step in common
            if step in steps_a[r] and step in steps_b[r]
            for g in _rng_differs(steps_a[r][step], steps_b[r][step])
        }
    )
    if rng:
        extra += f"; RNG states differ ({', '.join(rng)}) but nothing traced drew a difference"
    return {
        "found": False,
        "comparable": True,
        "compared_steps": len(common),
        "line": f"traces identical in all {len(common)} step(s) traced in both runs"
        f" (steps {common[0] + offset} to {common[-1] + offset}){extra}: no divergence there",
    }


def _finish(found: dict[str, Any], step: int, rank: int | None, compared: int) -> dict[str, Any]:
    where = f"rank {rank}, step {step}" if rank is not None else f"step {step}"
    what, todo, doc = suggestion(found["cause"])
    chain, because = found.pop("chain"), found.pop("because", None)
    found.update(
        found=True,
        comparable=True,
        step=step,
        rank=rank,
        compared_steps=compared,
        line=f"{where}: {chain} → {what}" + (f" ({because})" if because else ""),
        suggestion=todo,
        doc=doc,
    )
    return found


def render_localization(loc: dict[str, Any]) -> list[str]:
    """The lines a person reads: the chain, then what to do and where it is explained."""
    if not loc.get("found"):
        return [f"localized: {loc['line']}"]
    return [f"localized: {loc['line']}", f"next: {loc['suggestion']} (see {loc['doc']})"]


# -- the rules ----------------------------------------------------------------------------------
def _not_comparable(ha: dict[str, Any], hb: dict[str, Any]) -> str | None:
    if ha.get("format") != hb.get("format"):
        return "traces have different formats; not compared"
    if ha.get("device") != hb.get("device"):
        return (
            f"traces not compared: the original ran on {ha.get('device')}, the other run on "
            f"{hb.get('device')} (digests are taken differently on each)"
        )
    return None


def _first_difference(
    ha: dict[str, Any], hb: dict[str, Any], sa: dict[str, Any], sb: dict[str, Any]
) -> dict[str, Any] | None:
    for rule in (_data, _forward, _loss, _backward, _optimizer):
        found = rule(ha, hb, sa, sb)
        if found is not None:
            rng = _rng_differs(sa, sb)
            if rng:
                found["rng_differs"] = rng
                found["chain"] += f"; RNG state differs at the start of the step ({', '.join(rng)})"
                torch_rng = [r for r in rng if r in ("torch", "cuda")]
                if found["phase"] == "forward" and torch_rng and found.get("inputs_identical"):
                    found["cause"] = "random-state"
                    found.pop("because", None)
            return found
    return None


def _data(ha: Any, hb: Any, sa: dict[str, Any], sb: dict[str, Any]) -> dict[str, Any] | None:
    if sa.get("batch") == sb.get("batch"):
        return None
    ia, ib = sa.get("ids"), sb.get("ids")
    workers = _workers_differ(sa, sb)
    if workers and (ia is None or ib is None or ia == ib):
        # Same samples (or none named), other values, and the worker that made them was in
        # another state: its seeding. Other sample ids are the sampler's doing (data order).
        shown = "; ".join(f"worker {w} RNG state differs ({', '.join(g)})" for w, g in workers)
        same = " (same sample ids)" if ia is not None else ""
        return _hit(
            "data",
            "worker-seeding",
            f"batch differs{same}; {shown}",
            workers=[w for w, _ in workers],
        )
    if ia is not None and ib is not None:
        if ia == ib:
            return _hit("data", "data-content", "batch differs (same sample ids)")
        return _hit("data", "data-order", f"batch differs (sample ids {_ids(ia)} vs {_ids(ib)})")
    return _hit("data", "data-order", "batch differs (no sample ids recorded)")


def _workers_differ(sa: dict[str, Any], sb: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """The DataLoader workers (traced through ``Trace.loader``) whose generators differ, with
    the generators; a worker traced in one run only is not compared."""
    wa, wb = sa.get("workers") or {}, sb.get("workers") or {}
    out = []
    for w in sorted(wa.keys() & wb.keys(), key=str):
        ra, rb = wa[w] or {}, wb[w] or {}
        gens = sorted(k for k in ra.keys() | rb.keys() if ra.get(k) != rb.get(k))
        if gens:
            out.append((str(w), gens))
    return out


def _rng_differs(sa: dict[str, Any], sb: dict[str, Any]) -> list[str]:
    """The generators whose state differs at the start of the step. Not a divergence by
    itself (Python seeds its generator from the OS at start-up, used or not): it explains
    one, or is said beside a run that matched."""
    ra, rb = sa.get("rng") or {}, sb.get("rng") or {}
    return sorted(k for k in ra.keys() | rb.keys() if ra.get(k) != rb.get(k))


def _forward(
    ha: dict[str, Any], hb: dict[str, Any], sa: dict[str, Any], sb: dict[str, Any]
) -> dict[str, Any] | None:
    fa, fb = sa.get("fwd") or [], sb.get("fwd") or []
    mods_a, mods_b = ha["modules"], hb["modules"]
    for j, (ea, eb) in enumerate(zip(fa, fb, strict=False)):
        name_a, name_b = mods_a[ea[0]][0], mods_b[eb[0]][0]
        if name_a != name_b:
            return _hit(
                "forward",
                "execution-order",
                f"batch identical; forward ran {name_a} in the original, {name_b} here",
                modules=[name_a, name_b],
            )
        if ea[2] == eb[2]:
            continue
        name, kind, leaf = mods_a[ea[0]]
        delta = _delta(sa, sb, f"f{j}", ha)
        if ea[1] == eb[1]:
            inner = "" if leaf else ", every submodule identical"
            found = _hit(
                "forward",
                "nondeterministic-op",
                f"batch identical; forward of {name} ({kind}) differs "
                f"(inputs identical{inner}, {delta})",
                module=name,
                kind=kind,
                leaf=leaf,
                inputs_identical=True,
            )
            return _op_cause(found, ha, hb)
        parent = name.rsplit(".", 1)[0] if "." in name else "<model>"
        parent_kind = next((m[1] for m in mods_a if m[0] == parent), "?")
        return _hit(
            "forward",
            "outside-modules",
            f"batch identical; input of {name} ({kind}) differs while every module before it "
            f"matched: code in the forward of {parent} ({parent_kind}) between its submodules",
            module=parent,
            kind=parent_kind,
            inputs_identical=False,
        )
    if len(fa) != len(fb):
        return _hit(
            "forward",
            "execution-order",
            f"batch identical; forward ran {len(fa)} module calls in the original, {len(fb)} here",
        )
    return None


def _loss(ha: Any, hb: Any, sa: dict[str, Any], sb: dict[str, Any]) -> dict[str, Any] | None:
    if sa.get("loss") == sb.get("loss"):
        return None
    return _hit("loss", "loss", f"forward identical; loss differs ({_delta(sa, sb, 'loss', ha)})")


def _backward(
    ha: dict[str, Any], hb: dict[str, Any], sa: dict[str, Any], sb: dict[str, Any]
) -> dict[str, Any] | None:
    ga, gb = sa.get("grad") or [], sb.get("grad") or []
    for j, (ea, eb) in enumerate(zip(ga, gb, strict=False)):
        if ea == eb:
            continue
        param = ha["params"][ea[0]]
        module = param.rsplit(".", 1)[0] if "." in param else "<model>"
        kind = next((m[1] for m in ha["modules"] if m[0] == module), "?")
        found = _hit(
            "backward",
            "nondeterministic-op",
            f"forward and loss identical; gradient of {param} differs in the backward of "
            f"{module} ({kind}) ({_delta(sa, sb, f'g{j}', ha)})",
            module=module,
            kind=kind,
            parameter=param,
        )
        return _op_cause(found, ha, hb)
    if len(ga) != len(gb):
        return _hit(
            "backward",
            "execution-order",
            f"forward and loss identical; backward produced {len(ga)} gradients in the "
            f"original, {len(gb)} here",
        )
    return None


def _optimizer(
    ha: dict[str, Any], hb: dict[str, Any], sa: dict[str, Any], sb: dict[str, Any]
) -> dict[str, Any] | None:
    oa, ob = sa.get("opt") or [], sb.get("opt") or []
    changed = [
        (k, ga.get(k), gb.get(k))
        for ga, gb in zip(oa, ob, strict=False)
        for k in sorted(ga.keys() | gb.keys())
        if ga.get(k) != gb.get(k)
    ]
    pa, pb = sa.get("param") or [], sb.get("param") or []
    first = next((j for j, (x, y) in enumerate(zip(pa, pb, strict=False)) if x != y), None)
    if not changed and first is None:
        return None
    if changed:
        k, va, vb = changed[0]
        cause = "lr-schedule" if k == "lr" else "optimizer-settings"
        what = f"{k} {va!r} vs {vb!r}"
    else:
        cause, what = "optimizer-state", "same hyperparameters"
    param = ha["params"][pa[first][0]] if first is not None else None
    detail = f", first {param}" if param else ""
    delta = f"; {_delta(sa, sb, f'p{pa[first][0]}', ha)}" if first is not None else ""
    return _hit(
        "optimizer",
        cause,
        f"gradients identical, parameters differ after the step ({what}{detail}{delta})",
        parameter=param,
        optimizer=[list(c) for c in changed],
    )


def _op_cause(found: dict[str, Any], ha: dict[str, Any], hb: dict[str, Any]) -> dict[str, Any]:
    """An operation gave other bits on the same inputs: what the traces say changed around it."""
    if ha.get("threads") != hb.get("threads"):
        found["cause"] = "thread-count"
        found["because"] = f"{ha.get('threads')} vs {hb.get('threads')}"
    elif ha.get("torch") != hb.get("torch"):
        found["cause"] = "library-version"
        found["because"] = f"torch {ha.get('torch')} vs {hb.get('torch')}"
    return found


# -- helpers ------------------------------------------------------------------------------------
def _hit(phase: str, cause: str, chain: str, **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"phase": phase, "cause": cause, "chain": chain, "module": None}
    out.update(more)
    return out


def _ids(ids: list[Any]) -> str:
    shown = ", ".join(str(i) for i in ids[:_SHOWN_IDS])
    return shown + (", …" if len(ids) > _SHOWN_IDS else "")


def _delta(sa: dict[str, Any], sb: dict[str, Any], key: str, header: dict[str, Any]) -> str:
    """``max |Δ| 2.4e-07, 17 of 98,304 values``, or why it is not known."""
    va, vb = (sa.get("vals") or {}).get(key), (sb.get("vals") or {}).get(key)
    if va is None or vb is None:
        kept = header.get("values") or 0
        why = f"more than {kept:,} elements" if kept else "trace(values=N) keeps them"
        return f"max |Δ| not known: values not kept ({why})"
    import numpy as np

    try:
        xa, xb = (
            np.frombuffer(base64.b64decode(v[2]), dtype=np.dtype(v[0])).reshape(v[1])
            for v in (va, vb)
        )
    except (TypeError, ValueError) as e:
        return f"max |Δ| not known: values unreadable ({e})"
    if xa.shape != xb.shape:
        return f"shape {list(xa.shape)} vs {list(xb.shape)}"
    bits = xa.reshape(-1, 1).view(np.uint8) != xb.reshape(-1, 1).view(np.uint8)
    count = int(bits.any(axis=1).sum()) if xa.size else 0
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(xa.astype(np.float64) - xb.astype(np.float64))
    biggest = float(np.nanmax(diff)) if diff.size and not np.isnan(diff).all() else float("nan")
    return f"max |Δ| {biggest:.2g}, {count:,} of {xa.size:,} values"
