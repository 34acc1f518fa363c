"""``ledger show``: gather everything bound to a run into one JSON-able description."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol

from .._units import LINE_MAX, human_bytes, human_seconds, one_line
from ..errors import LedgerError
from ..index.checked import checked_runs, checked_verdicts
from ..store import Store
from .find import backed_ref, load_run
from .linked import linked_checks

__all__ = ["Part", "Printer", "describe_run", "render_run"]

# A piece of a line: its text, or (text, style) where the printer shows styles (a terminal).
Part = str | tuple[str, str]


class Printer(Protocol):
    """Where ``render_run`` prints (``ledger.cli._printer``): text is literal, never markup."""

    def line(self, *parts: Part) -> None:
        """``parts`` side by side as one line (a newline in one starts a new line)."""

    def table(
        self,
        columns: Sequence[str],
        rows: Sequence[Sequence[str]],
        *,
        title: str | None = None,
        no_wrap: Collection[int] = (),
    ) -> None:
        """A borderless table of one-line cells under a header row."""


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
        verdicts = index.query(
            "SELECT * FROM verdicts WHERE ref IN (SELECT ref FROM verdict_runs WHERE run_id = ?) "
            "ORDER BY created",
            (run.run_id,),
        )
        checks = linked_checks(store, run.run_id, index)
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
    info["checks"] = checks
    # What `ledger tag`, `rename` and `retract` decided about it, as the log backs it.
    curated = backed_ref(store, f"curation/{run.run_id}")
    curation = _get(store, curated) if curated is not None else None
    if isinstance(curation, dict) and curation.get("run_id") == run.run_id:
        info["curation"] = curation
    if warnings:
        info["warnings"] = warnings
    return info


def _code_files(store: Store, code: Any) -> dict[str, list[str]]:
    """Names of the files a reviewer should look at: those the patch changes, the untracked."""
    import re

    out: dict[str, Any] = {"patched": [], "untracked": [], "untracked_bytes": 0}
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
        entries = [e for e in tree.get("entries", []) if isinstance(e, dict) and "path" in e]
        out["untracked"] = [e["path"] for e in entries]
        out["untracked_bytes"] = sum(e["size"] for e in entries if isinstance(e.get("size"), int))
    return out


def _short_value(value: Any) -> str:
    import json

    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def _render_config(config: Any, out: Printer) -> None:
    """Where the config came from, then its values; or why there is none."""
    from ..capture.script_config import describe_sources

    if not isinstance(config, dict):
        return
    for source in describe_sources(config):
        out.line(f"  config    from {one_line(source, LINE_MAX)}")
    resolved = config.get("resolved")
    if isinstance(resolved, dict):
        for key, value in resolved.items():
            out.line(f"  config    {one_line(str(key))} = {one_line(_short_value(value))}")
    if not resolved and config.get("empty_reason"):
        out.line("  ", ("config", "yellow"), f"    {one_line(config['empty_reason'], LINE_MAX)}")


UNTRACKED_SHOWN = 5  # untracked files listed by name unless --all


def render_run(info: dict[str, Any], out: Printer, *, all_files: bool = False) -> None:
    """``info`` (``describe_run``) as lines and tables. Every value is printed as written (no
    markup), control characters escaped by the printer; names and tags on one line.
    Untracked files: their count and size, and the first few by name (``all_files``: all)."""
    run = info["run"]
    colour = "green" if run["status"] == "succeeded" else "red"
    out.line(
        (f"run {run['run_id']}", "bold"),
        "  ",
        (str(run["status"]), colour),
        f"  record {info['record']}",
    )
    curation = info.get("curation") or {}
    if curation.get("retracted"):
        why = one_line(str(curation.get("reason")))
        out.line(("  RETRACTED", "red"), f" {curation.get('created')}: {why}")
    name = curation.get("name") or run.get("name")
    if name:
        renamed = f" (recorded as {run.get('name')})" if curation.get("name") else ""
        out.line(f"  name      {one_line(name)}{one_line(renamed)}")
    tags = {**(run.get("tags") or {}), **(curation.get("tags") or {})}
    if tags:
        out.line(f"  tags      {one_line(' '.join(f'{k}={v}' for k, v in tags.items()))}")
    if run.get("signal") is not None:
        ended = f"exit      signal {run['signal']}  "
    elif run.get("exit_code") is not None:
        ended = f"exit      {run['exit_code']}  "
    else:  # an imported run: its source recorded no exit status
        ended = ""
    out.line(
        f"  {ended}wall {human_seconds(run.get('wall_seconds'))}  "
        f"peak RSS {human_bytes(run.get('peak_rss_bytes'))}"
    )
    contract = info.get("contract") or {}
    imported = run.get("imported")
    if imported:
        out.line(f"  started   {run['started']}  ended {run.get('ended')}")
        told = (
            f"from {imported['source']} {imported['tracking_uri']}, experiment "
            f"{imported['experiment']!r}, run {imported['run_id']} ({imported['status']}); "
            "not replayable"
        )
        out.line(f"  imported  {one_line(told, LINE_MAX)}")
        if imported.get("git_commit"):
            commit = one_line(str(imported["git_commit"]))
            out.line(f"  git       {commit} (as MLflow was told; not stored)")
    else:
        out.line(f"  started   {run['started']}  on {run['host']}")
        if run.get("job"):
            from ..capture.scheduler import describe_job

            out.line(f"  job       {one_line(describe_job(run['job']), LINE_MAX)}")
        out.line(f"  command   {one_line(' '.join(contract.get('argv', [])), LINE_MAX)}")
        out.line(f"  contract  {run['contract_digest']}")
    code = info.get("code") or {}
    if code:
        dirty = " + uncommitted changes" if code.get("dirty") else ""
        out.line(f"  code      {code.get('commit') or '(no commit)'}{dirty}")
    files = info.get("code_files") or {}
    for path in files.get("patched", []):
        out.line(f"  patched   {one_line(str(path), LINE_MAX)}")
    _untracked(files, out, all_files)
    _render_config(info.get("resolved_config"), out)
    for item in contract.get("inputs", []):
        count = item.get("n_files")
        many = f", {count} files" if isinstance(count, int) and count != 1 else ""
        out.line(
            f"  input     {one_line(str(item.get('path')), LINE_MAX)}  {item.get('digest')}  "
            f"{human_bytes(item.get('n_bytes'))}{many}"
        )
    for chk in run.get("inputs_after", []):
        if chk.get("changed"):
            out.line(
                "  ",
                ("input changed during the run", "red"),
                f": {one_line(str(chk['path']), LINE_MAX)}",
            )
    env = info.get("environment") or {}
    if env:
        py = env.get("python", {})
        out.line(f"  python    {py.get('version') if isinstance(py, dict) else py}")
    if run.get("replay_of"):
        out.line(f"  replays   {run['replay_of']}")
    for cp in run.get("checkpoints", []):
        what = cp.get("mode") or cp["event"]
        out.line(
            f"  checkpoint {cp['event']} step {cp.get('step')} ({what}) {cp['checkpoint_digest']}"
        )
    if run.get("metrics"):
        columns = ("name", "source", "rank", "points", "last", "last finite", "first non-finite")
        rows = [
            [
                one_line(str(m["name"])),  # user data: one line
                str(m["source"]),
                "" if m.get("rank") is None else str(m["rank"]),
                str(m["count"]),
                str(m.get("last")),
                str(m.get("last_finite")),
                "" if m.get("first_nonfinite_step") is None else str(m["first_nonfinite_step"]),
            ]
            for m in run["metrics"]
        ]
        out.table(columns, rows, title="metrics")
    for o in run.get("outputs", []):
        n = o.get("files")
        files_n = f"{n} file{'' if n == 1 else 's'}"
        state = "missing" if o.get("missing") else f"{files_n}, {human_bytes(o.get('bytes'))}"
        out.line(f"  output    {one_line(str(o['path']), LINE_MAX)}  {state}")
        stale = o.get("n_preexisting") or 0
        if stale:
            names = list(o.get("preexisting") or [])
            shown = ", ".join(one_line(str(n)) for n in names[:10])
            shown += f" and {stale - 10} more" if stale > 10 else ""
            out.line(f"            {stale} pre-existing file(s), not written by the run: {shown}")
    for r in info.get("replays", []):
        out.line(f"  replayed by {r['run_id']} ({r['status']})")
    for v in info.get("verdicts", []):
        role = "of this run" if v["original"] == run["run_id"] else f"of {v['original']}"
        out.line(f"  verdict   {v['mode']} {role}: {v['outcome']} ({v['oid'][:15]})")
        if v.get("summary"):
            out.line(f"            {v['summary']}")
    for c in info.get("checks", []):
        verdict = "passed" if c["passed"] else "FAILED " + ", ".join(c["failed"][:5])
        out.line(f"  {c['kind']:9} {c['id']}: {verdict} ({c['oid'][:15]})")
    for note in run.get("notes", []):
        out.line("  ", ("note", "yellow"), f" {note}")


def _untracked(files: dict[str, Any], out: Printer, all_files: bool) -> None:
    """One line of count and size, then the names: the first few, or every one."""
    names = list(files.get("untracked", []))
    if not names:
        return
    n = len(names)
    size = human_bytes(files.get("untracked_bytes"))
    shown = names if all_files else names[:UNTRACKED_SHOWN]
    more = "" if len(shown) == n else f"; the first {len(shown)} below, --all lists every one"
    out.line(f"  untracked {n} file{'s' if n != 1 else ''}, {size}{more}")
    for path in shown:
        out.line(f"  untracked {one_line(str(path), LINE_MAX)}")
