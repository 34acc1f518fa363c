"""export, import: reproducibility packages (one file with everything to replay some runs)."""

from __future__ import annotations

from pathlib import Path

import typer

from ._common import JsonOpt, LedgerOpt, open_store, out_console, print_json
from ._output import progress

__all__ = ["register"]


def export(
    runs: list[str] = typer.Argument(..., metavar="RUN...", help="Run ids, prefixes or names."),
    out: Path = typer.Option(
        ..., "--output", "-o", metavar="FILE", help="The package to write (e.g. paper.ledgerpkg)."
    ),
    no_data: bool = typer.Option(
        False,
        "--no-data",
        help="Leave input contents out; keep their digests and where to fetch them.",
    ),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Write one file (tar + zstd) with everything to replay and audit RUN...: objects, a
    manifest of every digest, and a README for reviewers."""
    from ..share.package import export_package

    store = open_store(ledger)
    with progress("packaging runs"):
        report = export_package(store, runs, out, data=not no_data)
    if json_out:
        print_json({**report.__dict__, "path": str(report.path)})
        return
    con = out_console()
    for note in report.notes:
        con.print(f"note: {note}", markup=False)
    con.print(
        f"Wrote {report.path}: {len(report.runs)} run(s), {report.refs} refs, "
        f"{report.objects} objects ({report.bytes} bytes)"
        + (f"; {report.left_out} input(s) left out" if report.left_out else ""),
        markup=False,
    )


def import_(
    package: Path = typer.Argument(..., metavar="FILE", help="A .ledgerpkg written by export."),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Check a package whole (every digest, the manifest, no links or escaping paths, a size
    cap), then add its runs. Exit 1 if a ref collides with a different one here."""
    from ..share.package import import_package

    store = open_store(ledger)
    store.check_writable()
    with progress("importing"):
        report = import_package(store, package)
    refs = report.refs
    if json_out:
        print_json(
            {
                "runs": report.runs,
                "objects": report.objects,
                "new_objects": report.new_objects,
                "bytes": report.bytes,
                "origin": report.origin,
                "refs_added": refs.added,
                "refs_present": refs.present,
                "collisions": [{"ref": n, "here": h, "theirs": t} for n, h, t in refs.collisions],
            }
        )
    else:
        con = out_console()
        con.print(
            f"Imported {len(report.runs)} run(s) from ledger {report.origin.get('ledger')}: "
            f"{report.new_objects} new of {report.objects} objects, {len(refs.added)} refs "
            f"added, {len(refs.present)} already here",
            markup=False,
        )
        for name, here, theirs in refs.collisions:
            con.print(
                f"collision: {name} is {here} here and {theirs} in the package; kept this ledger's",
                markup=False,
            )
    if refs.collisions:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command()(export)
    app.command("import")(import_)
