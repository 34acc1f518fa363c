"""keygen, attest, verify-attestation: signed statements a paper's artifact appendix can cite."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from .._units import LINE_MAX, one_line
from ._common import JsonOpt, LedgerOpt, open_store, out_console, print_json

__all__ = ["register"]

KeyOpt = typer.Option(
    None,
    "--key",
    "-k",
    metavar="FILE",
    help="Key file (PEM). Default: $LEDGER_SIGNING_KEY / $LEDGER_VERIFY_KEY.",
)


def keygen(
    path: Path = typer.Argument(
        ..., metavar="PATH", help="Where to write the private key; PATH.pub gets the public key."
    ),
    json_out: bool = JsonOpt,
) -> None:
    """Create an Ed25519 key pair for `ledger attest` (private key mode 600)."""
    from ..attest import generate_key

    pub, keyid = generate_key(path.expanduser().absolute())
    if json_out:
        print_json({"private_key": str(path), "public_key": str(pub), "keyid": keyid})
    else:
        con = out_console()
        con.print(f"private key {path} (keep it; never put it in a ledger)", soft_wrap=True)
        con.print(f"public key  {pub} (give it to reviewers)", soft_wrap=True)
        con.print(f"key id      {keyid}", soft_wrap=True)


def attest(
    run: str = typer.Argument(..., metavar="RUN", help="Run id, unique prefix, or name."),
    key: Path | None = KeyOpt,
    out: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        metavar="FILE",
        help="Where to write the envelope (default: RUN_ID.intoto.json).",
    ),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Write a signed in-toto attestation (DSSE envelope) about a sealed run."""
    from ..attest import attest_run, load_private_key
    from ..attest.keys import SIGNING_KEY_ENV, resolve_key_path
    from ..store.atomic import atomic_write_bytes

    store = open_store(ledger)
    signing = load_private_key(resolve_key_path(key, SIGNING_KEY_ENV, store.root))
    envelope, statement = attest_run(store, run, signing)
    run_id = statement["predicate"]["runDetails"]["metadata"]["invocationId"]
    dest = (out or Path(f"{run_id}.intoto.json")).expanduser().absolute()
    data = json.dumps(envelope, indent=2, sort_keys=True).encode() + b"\n"
    dest.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(dest, data, dest.parent)
    head = statement["predicate"]["buildDefinition"]["internalParameters"]["chainHead"]
    info = {
        "path": str(dest),
        "run_id": run_id,
        "chain_head": head,
        "subjects": [s["name"] for s in statement["subject"]],
        "keyid": envelope["signatures"][0]["keyid"],
    }
    if json_out:
        print_json(info)
    else:
        con = out_console()
        con.print(f"attestation {dest}", soft_wrap=True)
        con.print(f"  run        {run_id}", soft_wrap=True)
        con.print(f"  chain head {head}", soft_wrap=True)
        con.print(f"  subjects   {', '.join(info['subjects'])}", soft_wrap=True, markup=False)
        con.print(f"  key id     {info['keyid']}", soft_wrap=True)


def verify_attestation(
    file: Path = typer.Argument(..., metavar="FILE", help="The envelope `ledger attest` wrote."),
    key: Path | None = KeyOpt,
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Check an attestation's signature, its chain head and every object it names. Exit 1 on
    problems."""
    from ..attest import load_public_key, read_envelope
    from ..attest import verify_attestation as check
    from ..attest.keys import VERIFY_KEY_ENV, resolve_key_path

    store = open_store(ledger)
    public = load_public_key(resolve_key_path(key, VERIFY_KEY_ENV, None))
    report = check(store, read_envelope(file), public)
    stmt = report.statement or {}
    params = stmt.get("predicate", {}).get("buildDefinition", {}).get("internalParameters", {})
    if json_out:
        print_json(
            {
                "ok": report.ok,
                "keyid": report.keyid,
                "chain_head": params.get("chainHead"),
                "subjects": stmt.get("subject", []),
                "objects_checked": report.objects_checked,
                "problems": report.problems,
            }
        )
    else:
        from rich.markup import escape

        con = out_console()
        for p in report.problems:
            con.print(f"[red]✗[/] {escape(one_line(str(p), LINE_MAX))}", soft_wrap=True)
        if report.ok:
            con.print(
                f"[green]✓[/] attestation verified: signed by key {report.keyid}, chain head "
                f"{params.get('chainHead')} is in this ledger, {report.objects_checked} objects "
                "re-hashed",
                soft_wrap=True,
            )
            for s in stmt.get("subject", []):
                con.print(
                    f"  {s['name']}  blake3:{s['digest']['blake3']}", soft_wrap=True, markup=False
                )
        else:
            con.print(f"[red]{len(report.problems)} problem(s)[/] in {escape(str(file))}")
    if not report.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command()(keygen)
    app.command()(attest)
    app.command("verify-attestation")(verify_attestation)
