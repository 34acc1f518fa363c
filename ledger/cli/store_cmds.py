"""init, verify, gc, cat, reindex: commands about the ledger itself."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from .._units import human_bytes
from ._common import (
    JsonOpt,
    LedgerOpt,
    err_console,
    finite_non_negative,
    ledger_dir,
    open_store,
    out_console,
    print_json,
)
from ._output import progress

__all__ = ["register"]


def init(ledger: Path | None = LedgerOpt, json_out: bool = JsonOpt) -> None:
    """Create a ledger (.ledger at the git root or here, or --ledger/LEDGER_DIR)."""
    from ..store import Store, find_ledger_dir

    root = find_ledger_dir(ledger_dir(ledger), for_init=True)
    existed = (root / "config.json").is_file()
    store = Store.init(root)
    store.check_writable()
    if json_out:
        print_json({"path": str(store.root), "id": store.id, "created": not existed})
    else:
        verb = "Using existing" if existed else "Initialised"
        from rich.markup import escape

        out_console().print(f"{verb} ledger at [bold]{escape(str(store.root))}[/] (id {store.id})")


def verify(
    head: str | None = typer.Option(
        None,
        "--head",
        metavar="HEAD",
        help="Fail unless the log still extends this chain head (written down earlier).",
    ),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Re-hash every object, check refs, log chain, log lines and index against the records;
    print the chain head. Exit 1 on problems."""
    from rich.markup import escape

    from ..capture.gitsource import check_git_sources
    from ..index.consistency import check_consistency
    from ..replay.material import add_replay_checks
    from ..store.anchor import parse_head
    from ..store.verify import verify_store

    anchor = None if head is None else parse_head(head)
    store = open_store(ledger)
    with progress("verifying objects") as bar:
        report = verify_store(
            store,
            head=anchor,
            progress=lambda n: bar.update(0, description=f"verified {n} objects"),
        )
    report.problems += check_consistency(store)
    report.problems += check_git_sources(store)
    add_replay_checks(store, report)
    if json_out:
        print_json(
            {
                "ok": report.ok,
                "objects": report.objects,
                "refs": report.refs,
                "log_entries": report.log_entries,
                "head": report.head,
                "problems": [p.__dict__ for p in report.problems],
                "notes": report.notes,
            }
        )
    else:
        con = out_console()
        for p in report.problems:
            con.print(f"[red]✗[/] {p.kind}: {escape(p.message)}")
        for n in report.notes:
            con.print(f"note: {n}", markup=False)
        summary = f"{report.objects} objects, {report.refs} refs, {report.log_entries} log entries"
        if report.ok:
            con.print(f"[green]✓[/] ledger verified: {summary}")
        else:
            con.print(f"[red]{len(report.problems)} problem(s)[/] in {summary}")
        con.print(f"chain head {report.head or '(empty log)'}", soft_wrap=True)
        if anchor is not None and not any(p.kind == "head" for p in report.problems):
            con.print(f"[green]✓[/] extends head {anchor}", soft_wrap=True)
    if not report.ok:
        raise typer.Exit(1)


def gc(
    yes: bool = typer.Option(False, "--yes", help="Delete for real (default: dry run)."),
    grace: float = typer.Option(
        24.0,
        "--grace-hours",
        min=0.0,
        metavar="HOURS",
        callback=finite_non_negative,
        help="Keep unreachable objects younger than this.",
    ),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Delete objects no ref reaches. Dry run unless --yes."""
    from ..store.gc import collect_garbage

    store = open_store(ledger)
    store.check_writable() if yes else None
    with progress("collecting garbage" if yes else "finding unreachable objects"):
        report = collect_garbage(store, delete=yes, grace_seconds=grace * 3600)
    if json_out:
        print_json(report.__dict__)
        return
    con = out_console()
    action, freed = ("deleted", "freed") if yes else ("would delete", "would be freed")
    live = f" or in use by {len(report.live_runs)} run(s) in flight" if report.live_runs else ""
    con.print(
        f"{report.reachable} reachable; {action} {len(report.unreachable)} unreachable "
        f"object(s) ({human_bytes(report.freed_bytes)} {freed}); "
        f"kept {len(report.too_young)} younger than {grace:g} h{live}"
    )
    if report.staging_removed:
        con.print(
            f"{'removed' if yes else 'would remove'} {len(report.staging_removed)} abandoned "
            f"staging dir(s) ({human_bytes(report.staging_bytes)}): "
            f"{', '.join(report.staging_removed)}"
        )
    if not yes and (report.unreachable or report.staging_removed):
        con.print("Dry run: nothing was deleted. Run `ledger gc --yes` to delete.")


def cat(
    ident: str = typer.Argument(
        ..., metavar="ID", help="Object id, unique id prefix, or ref name."
    ),
    ledger: Path | None = LedgerOpt,
) -> None:
    """Write an object's content to stdout (verified)."""
    store = open_store(ledger)
    oid = store.refs.get(ident) if "/" in ident else None
    if oid is None:
        oid = store.objects.resolve(ident)
    store.objects.verify(oid)
    store.objects.copy_to(oid, sys.stdout.buffer)
    sys.stdout.buffer.flush()


def reindex(ledger: Path | None = LedgerOpt, json_out: bool = JsonOpt) -> None:
    """Rebuild the SQLite index from the objects and the log, and repair the ref files a
    crash left behind their log lines."""
    from ..index import rebuild_index

    store = open_store(ledger)
    with progress("rebuilding the index"):
        done = rebuild_index(store, repair_refs=True)
    n, damage, fixed = done.applied, done.damage, done.refs
    if damage is not None:
        err_console().print(
            f"The index file was damaged ({damage}): it was deleted and rebuilt.", markup=False
        )
    if json_out:
        print_json(
            {
                "log_entries_applied": n,
                "refs_repaired": fixed.repaired,
                "refs_left": fixed.left,
                **({"damaged": damage} if damage else {}),
            }
        )
        return
    con = out_console()
    for name in fixed.repaired:
        con.print(f"repaired ref {name}: it now holds what the log says", markup=False)
    for name in fixed.left:
        con.print(
            f"left ref {name} as it is: no accepted log line made it, or the object the log "
            "names is missing (`ledger verify` says which)",
            markup=False,
        )
    con.print(f"Index rebuilt from {n} log entries.")


def register(app: typer.Typer) -> None:
    app.command()(init)
    app.command()(verify)
    app.command()(gc)
    app.command()(cat)
    app.command()(reindex)
    _ = err_console
