"""``ledger show``: gather everything bound to a run into one JSON-able description."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._units import human_bytes, human_seconds, one_line
from ..errors import LedgerError
from ..index.checked import checked_runs, checked_verdicts
from ..store import Store
from .find import load_run

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["describe_run", "render_run"]


def _get(store: Store, oid: str | None) -> Any:
    if oid is None:
        return None
    try:
        return store.get_json(oid)
    except LedgerError as e:
        return {"error": e.message}


def describe_run(store: Store, text: str) -> dict[str, Any]:
    from ..index import Index

    oid, run = load_run(store, text)
    info: dict[str, Any] = {"record": oid, "run": run.to_json()}
    contract = _get(store, run.contract)
    info["contract"] = contract
    if isinstance(contract, dict):
        info["code"] = _get(store, contract.get("code"))
        env = _get(store, contract.get("environment"))
        if isinstance(env, dict):
            env = {k: v for k, v in env.items() if k != "packages"} | {
                "packages_count": len(env.get("packages") or {})
            }
        info["environment"] = env
    info["resolved_config"] = _get(store, run.resolved_config)
    info["code_files"] = _code_files(store, info.get("code"))
    with Index(store) as index:
        index.sync()
        replays = index.query(
            "SELECT * FROM runs WHERE replay_of = ? ORDER BY run_id", (run.run_id,)
        )
        like = f'%"{run.run_id}"%'
        verdicts = index.query(
            "SELECT * FROM verdicts WHERE original = ? OR replays LIKE ? ORDER BY created",
            (run.run_id, like),
        )
    # The index only picks candidates; what is shown is read back from each hashed record.
    warnings: list[str] = []
    info["replays"] = [
        {"run_id": r["run_id"], "status": r["status"], "exit_code": r["exit_code"]}
        for r in sorted(
            checked_runs(store, replays, warnings, every_run=False), key=lambda r: r["run_id"]
        )
        if r["replay_of"] == run.run_id
    ]
    info["verdicts"] = checked_verdicts(store, run.run_id, verdicts, warnings)
    from .linked import linked_checks

    info["checks"] = linked_checks(store, run.run_id)
    if warnings:
        info["warnings"] = warnings
    return info


def _code_files(store: Store, code: Any) -> dict[str, list[str]]:
    """Names of the files a reviewer should look at: those the patch changes, the untracked."""
    import re

    out: dict[str, list[str]] = {"patched": [], "untracked": []}
    if not isinstance(code, dict):
        return out
    if code.get("patch"):
        try:
            text = store.objects.get_bytes(code["patch"]).decode("utf-8", errors="replace")
        except LedgerError:
            text = ""
        out["patched"] = re.findall(r"^diff --git a/(.+?) b/", text, re.M)
    tree = _get(store, code.get("untracked"))
    if isinstance(tree, dict):
        out["untracked"] = [e["path"] for e in tree.get("entries", []) if "path" in e]
    return out


def _short_value(value: Any) -> str:
    import json

    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def render_run(info: dict[str, Any], con: Console) -> None:
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    run = info["run"]
    colour = "green" if run["status"] == "succeeded" else "red"
    con.print(
        f"[bold]run {run['run_id']}[/]  [{colour}]{run['status']}[/]  record {info['record']}"
    )
    if run.get("name"):
        con.print(f"  name      {one_line(run['name'])}", markup=False)  # user data
    if run.get("tags"):
        tags = one_line(" ".join(f"{k}={v}" for k, v in run["tags"].items()))
        con.print(f"  tags      {tags}", markup=False)
    if run.get("signal") is not None:
        ended = f"exit      signal {run['signal']}  "
    elif run.get("exit_code") is not None:
        ended = f"exit      {run['exit_code']}  "
    else:  # an imported run: its source recorded no exit status
        ended = ""
    con.print(
        f"  {ended}wall {human_seconds(run.get('wall_seconds'))}  "
        f"peak RSS {human_bytes(run.get('peak_rss_bytes'))}"
    )
    contract = info.get("contract") or {}
    imported = run.get("imported")
    if imported:
        con.print(f"  started   {run['started']}  ended {run.get('ended')}")
        con.print(
            f"  imported  from {imported['source']} {imported['tracking_uri']}, experiment "
            f"{imported['experiment']!r}, run {imported['run_id']} ({imported['status']}); "
            "not replayable",
            markup=False,
        )
        if imported.get("git_commit"):
            con.print(f"  git       {imported['git_commit']} (as MLflow was told; not stored)")
    else:
        con.print(f"  started   {run['started']}  on {run['host']}")
        con.print(f"  command   {' '.join(contract.get('argv', []))}", markup=False)
        con.print(f"  contract  {run['contract_digest']}")
    code = info.get("code") or {}
    if code:
        dirty = " + uncommitted changes" if code.get("dirty") else ""
        con.print(f"  code      {code.get('commit') or '(no commit)'}{dirty}")
    files = info.get("code_files") or {}
    for path in files.get("patched", []):
        con.print(f"  patched   {path}", markup=False)
    for path in files.get("untracked", []):
        con.print(f"  untracked {path}", markup=False)
    resolved = (info.get("resolved_config") or {}).get("resolved")
    if isinstance(resolved, dict):
        for key, value in resolved.items():
            con.print(f"  config    {key} = {_short_value(value)}", markup=False)
    for item in contract.get("inputs", []):
        count = item.get("n_files")
        many = f", {count} files" if isinstance(count, int) and count != 1 else ""
        con.print(
            f"  input     {item.get('path')}  {item.get('digest')}  "
            f"{human_bytes(item.get('n_bytes'))}{many}",
            markup=False,
        )
    for chk in run.get("inputs_after", []):
        if chk.get("changed"):
            con.print(f"  [red]input changed during the run[/]: {escape(str(chk['path']))}")
    env = info.get("environment") or {}
    if env:
        py = env.get("python", {})
        con.print(f"  python    {py.get('version') if isinstance(py, dict) else py}")
    if run.get("replay_of"):
        con.print(f"  replays   {run['replay_of']}")
    for cp in run.get("checkpoints", []):
        what = cp.get("mode") or cp["event"]
        con.print(
            f"  checkpoint {cp['event']} step {cp.get('step')} ({what}) {cp['checkpoint_digest']}"
        )
    if run.get("metrics"):
        t = Table(title="metrics", box=None)
        for c in ("name", "source", "rank", "points", "last", "last finite", "first non-finite"):
            t.add_column(c)
        for m in run["metrics"]:
            t.add_row(
                Text(m["name"]),  # user data: never markup
                m["source"],
                "" if m.get("rank") is None else str(m["rank"]),
                str(m["count"]),
                str(m.get("last")),
                str(m.get("last_finite")),
                "" if m.get("first_nonfinite_step") is None else str(m["first_nonfinite_step"]),
            )
        con.print(t)
    for out in run.get("outputs", []):
        n = out.get("files")
        files = f"{n} file{'' if n == 1 else 's'}"
        state = "missing" if out.get("missing") else f"{files}, {human_bytes(out.get('bytes'))}"
        con.print(f"  output    {out['path']}  {state}", markup=False)
        stale = out.get("n_preexisting") or 0
        if stale:
            names = list(out.get("preexisting") or [])
            shown = ", ".join(names[:10]) + (f" and {stale - 10} more" if stale > 10 else "")
            con.print(
                f"            {stale} pre-existing file(s), not written by the run: {shown}",
                markup=False,
            )
    for r in info.get("replays", []):
        con.print(f"  replayed by {r['run_id']} ({r['status']})")
    for v in info.get("verdicts", []):
        role = "of this run" if v["original"] == run["run_id"] else f"of {v['original']}"
        con.print(f"  verdict   {v['mode']} {role}: {v['outcome']} ({v['oid'][:15]})")
        if v.get("summary"):
            con.print(f"            {v['summary']}", markup=False)
    for c in info.get("checks", []):
        verdict = "passed" if c["passed"] else "FAILED " + ", ".join(c["failed"][:5])
        con.print(f"  {c['kind']:9} {c['id']}: {verdict} ({c['oid'][:15]})", markup=False)
    for note in run.get("notes", []):
        con.print(f"  [yellow]note[/] {escape(str(note))}")
