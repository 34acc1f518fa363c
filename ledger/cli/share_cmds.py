"""export, import: reproducibility packages (one file with everything to replay some runs)."""

from __future__ import annotations

from pathlib import Path

import typer

from .._units import LINE_MAX, one_line
from ..errors import UsageError
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
        con.print(f"note: {one_line(note, LINE_MAX)}", markup=False)
    con.print(
        f"Wrote {report.path}: {len(report.runs)} run(s), {report.refs} refs, "
        f"{report.objects} objects ({report.bytes} bytes)"
        + (f"; {report.left_out} input(s) left out" if report.left_out else ""),
        markup=False,
    )


def import_(
    source: list[str] = typer.Argument(
        ...,
        metavar="FILE | mlflow PATH|URI",
        help="A .ledgerpkg written by export; or `mlflow` and an MLflow store: an mlruns/ "
        "folder, an MLflow sqlite database, or a tracking URI (file:, sqlite:, http(s):).",
    ),
    experiment: list[str] = typer.Option(
        [],
        "--experiment",
        metavar="NAME",
        help="mlflow: import only this experiment (name or id; repeatable).",
    ),
    run_id: list[str] = typer.Option(
        [], "--run-id", metavar="ID", help="mlflow: import only this MLflow run (repeatable)."
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="mlflow: read and list what would be imported; write nothing."
    ),
    max_ratio: float | None = typer.Option(
        None,
        "--max-ratio",
        min=1.0,
        metavar="N",
        show_default=False,
        # The default is share.package.MAX_RATIO, imported only when a package is read (a
        # test holds this text to it).
        help="A package may unpack to N times its own size (at least 64 MiB; default 200); "
        "more is refused as a decompression bomb before anything is unpacked.",
    ),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Check a package whole (every digest, the manifest, no links or escaping paths, a size
    cap), then add its runs. Exit 1 if a ref collides with a different one here. With
    `mlflow PATH|URI`: add MLflow's runs (params, metric histories, tags, artifacts) as
    imported runs, which cannot be replayed; runs imported before are left as they are."""
    if len(source) == 2 and source[0] == "mlflow":
        _import_mlflow(source[1], experiment, run_id, dry_run, ledger, json_out)
        return
    if len(source) != 1:
        raise UsageError(
            f"expected one package FILE or `mlflow PATH|URI`, got {len(source)} arguments",
            hint="ledger import paper.ledgerpkg, or ledger import mlflow ./mlruns",
        )
    if experiment or run_id or dry_run:
        raise UsageError(
            "--experiment, --run-id and --dry-run apply to `ledger import mlflow` only",
            hint="ledger import mlflow PATH|URI --experiment NAME --dry-run",
        )
    _import_package(Path(source[0]), ledger, json_out, max_ratio)


def _import_package(
    package: Path, ledger: Path | None, json_out: bool, max_ratio: float | None = None
) -> None:
    from ..share.package import MAX_RATIO, import_package

    store = open_store(ledger)
    store.check_writable()
    with progress("importing"):
        report = import_package(
            store, package, max_ratio=MAX_RATIO if max_ratio is None else max_ratio
        )
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
                f"collision: {one_line(name)} is {here} here and {theirs} in the package; "
                "kept this ledger's",
                markup=False,
            )
    if refs.collisions:
        raise typer.Exit(1)


def _import_mlflow(
    text: str,
    experiments: list[str],
    run_ids: list[str],
    dry_run: bool,
    ledger: Path | None,
    json_out: bool,
) -> None:
    from ..imports.mlflow_import import import_mlflow

    store = open_store(ledger)
    if not dry_run:
        store.check_writable()
    with progress("reading MLflow"):
        report = import_mlflow(
            store, text, experiments=experiments, run_ids=run_ids, dry_run=dry_run
        )
    if json_out:
        print_json(
            {
                "source": report.source,
                "dry_run": report.dry_run,
                "imported": [r.__dict__ for r in report.imported],
                "already_imported": [r.__dict__ for r in report.present],
                "notes": report.notes,
            }
        )
        return
    con = out_console()
    verb = "Would import" if dry_run else "Imported"
    for r in report.imported:
        con.print(
            f"{'would import' if dry_run else 'imported'} {r.run_id}  {r.status:<11} "
            f"mlflow {one_line(r.mlflow_run_id)}  {one_line(r.name or '')}  ({r.metrics} "
            f"metric(s), {r.points} "
            f"point(s)" + ("" if dry_run else f", {r.artifacts} artifact file(s)") + ")",
            markup=False,
        )
    for r in report.present:
        con.print(f"already imported {r.run_id}  mlflow {one_line(r.mlflow_run_id)}", markup=False)
    for note in report.notes:
        con.print(f"note: {one_line(note, LINE_MAX)}", markup=False)
    con.print(
        f"{verb} {len(report.imported)} MLflow run(s) from {report.source}; "
        f"{len(report.present)} already imported. Imported runs cannot be replayed.",
        markup=False,
    )


def register(app: typer.Typer) -> None:
    app.command()(export)
    app.command("import")(import_)
