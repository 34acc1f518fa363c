"""The ``README.md`` inside a package: what a reviewer reads before running anything.

Per run: how to reproduce it, its code, data, resolved config, environment and hardware, seeds,
metrics, checkpoints and replay verdicts (with the tolerances that held), then how to replay.
Built from the records alone, so it says only what the ledger knows.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from ..errors import LedgerError
from ..records.base import record_from_json
from ..records.code import CodeSnapshot
from ..records.contract import Contract
from ..records.data import InputDigest
from ..records.env import Environment
from ..records.run import Run
from ..store import Store
from .closure import Closure

__all__ = ["render_readme"]


def _get(store: Store, oid: str | None, model: type) -> Any:
    if oid is None or not store.objects.has(oid):
        return None
    try:
        return record_from_json(store.get_json(oid), model)
    except (LedgerError, ValueError):
        return None


def _code(lines: list[str], code: CodeSnapshot | None, carried: bool) -> None:
    if code is None:
        lines.append("- code: (snapshot not available)")
        return
    if not code.in_repo:
        lines.append(f"- code: a plain snapshot of the files (tree `{code.snapshot}`)")
        return
    stats = code.patch_stats
    patch = f"; uncommitted patch: {stats.files} file(s), {stats.bytes} bytes" if stats else ""
    untracked = "; untracked files stored" if code.untracked else ""
    travels = "carried in this package" if carried else "NOT carried: clone the repository"
    lines.append(f"- code: commit `{code.commit}` ({travels}){patch}{untracked}")
    if code.remotes:
        lines.append("- repository: " + ", ".join(f"{k} {v}" for k, v in code.remotes.items()))


def _run(store: Store, closure: Closure, run_id: str, lines: list[str]) -> None:
    run = _get(store, closure.refs.get(f"runs/{run_id}"), Run)
    if not isinstance(run, Run):
        return
    contract = _get(store, run.contract, Contract)
    lines += [f"## Run `{run_id}`" + (f" ({run.name})" if run.name else ""), ""]
    lines.append(f"- status: {run.status}, exit code {run.exit_code}; started {run.started}")
    if isinstance(contract, Contract):
        lines.append(f"- command: `{shlex.join(contract.argv)}`")
        code = _get(store, contract.code, CodeSnapshot)
        commit = code.commit if isinstance(code, CodeSnapshot) else None
        _code(lines, code, commit is not None and f"sources/git/{commit}" in closure.refs)
        dropped = {lo.path: lo for lo in closure.left_out if lo.run_id == run_id}
        for raw in contract.inputs:
            d = InputDigest.model_validate(raw)
            where = "in this package"
            if d.path in dropped:
                fetch = dropped[d.path].fetch or "not recorded: ask the authors"
                where = f"left out (--no-data); fetch from {fetch}"
            elif d.dvc is not None:
                where += f"; DVC-tracked ({d.dvc.source})"
            lines.append(
                f"- input `{d.path}`: {d.kind}, {d.n_files} file(s), {d.n_bytes} bytes, digest "
                f"`{d.digest}` ({where})"
            )
        for cf in contract.config_files:
            lines.append(f"- config file `{cf.get('path')}`: `{cf.get('oid')}`")
        env = _get(store, contract.environment, Environment)
        if isinstance(env, Environment):
            gpus = ", ".join(g.name for g in env.determinism.gpus) or "none"
            torch = env.determinism.torch.version if env.determinism.torch else "not installed"
            lines.append(
                f"- environment: Python {env.python.version} ({env.python.implementation}), "
                f"{env.os.system} {env.os.machine} {env.os.libc}, torch {torch}, "
                f"{len(env.packages)} packages"
            )
            lines.append(
                f"- hardware: {env.cpu.model} ({env.cpu.logical_count} CPUs), "
                f"{env.memory_total} bytes of memory, GPUs: {gpus}"
            )
        if contract.seed_root is not None:
            lines.append(f"- seed root (LEDGER_SEED_ROOT): {contract.seed_root}")
    if run.resolved_config is not None and store.objects.has(run.resolved_config):
        cfg = store.get_json(run.resolved_config)
        resolved = cfg.get("resolved") if isinstance(cfg, dict) else cfg
        lines.append(f"- resolved config: `{json.dumps(resolved, sort_keys=True)}`")
    seeds = (run.runtime or {}).get("seeds") or []
    for s in seeds if isinstance(seeds, list) else []:
        if isinstance(s, dict):
            lines.append(f"- seed of rank {s.get('rank')}: {s.get('root')}")
    for m in run.metrics:
        lines.append(
            f"- metric `{m.name}` ({m.source}): {m.count} points, "
            f"last {m.last} at step {m.last_step}"
        )
    for c in run.checkpoints:
        lines.append(f"- checkpoint {c.event} at step {c.step}: `{c.checkpoint_digest}`")
    for name, oid in sorted(closure.refs.items()):
        if not name.startswith(f"verdicts/{run_id}/"):
            continue
        v = store.get_json(oid)
        settings = v.get("settings") or {}
        tol = ", ".join(
            f"{k}={settings[k]}" for k in ("rtol", "atol") if settings.get(k) is not None
        )
        lines.append(
            f"- replay verdict ({v.get('mode')}): **{v.get('outcome')}** — {v.get('summary')}"
            + (
                f" (tolerances that held: {tol})"
                if tol and v.get("outcome") == "reproduced"
                else ""
            )
        )
    lines += ["", f"Replay it: `ledger replay {run_id}` (bitwise), or with `--rtol`/`--atol`.", ""]


def render_readme(store: Store, closure: Closure) -> str:
    lines = [
        "# Reproducibility package",
        "",
        f"Runs: {', '.join(closure.runs)}. Exported from ledger `{store.id}`.",
        "",
        "## How to replay",
        "",
        "```",
        "pip install ledger-repro",
        "mkdir review && cd review && ledger init",
        "ledger import paper.ledgerpkg      # checks every digest before anything is added",
        "ledger verify",
        *[f"ledger replay {r}" for r in closure.runs],
        "ledger audit claims.yaml           # if the authors gave one",
        "```",
        "",
        "`manifest.json` lists every object's BLAKE3 id and size; `objects/b3/<id>` holds its "
        "content. Nothing here needs the authors' repository: the code's commit travels as "
        "files plus the commit object, and replay rebuilds that exact commit.",
        "",
    ]
    for note in closure.notes:
        lines += [f"> note: {note}", ""]
    for run_id in closure.runs:
        _run(store, closure, run_id, lines)
    return "\n".join(lines)
