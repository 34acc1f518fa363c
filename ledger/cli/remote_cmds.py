"""remote add/list/remove, push, pull, clone: share runs through storage teams already run."""

from __future__ import annotations

from pathlib import Path

import typer

from ._common import JsonOpt, LedgerOpt, err_console, open_store, out_console, print_json
from ._output import progress_stages

__all__ = ["register"]

remote_app = typer.Typer(help="Name the remotes runs are pushed to and pulled from.")


@remote_app.command("add")
def remote_add(
    name: str = typer.Argument(..., help="A short name, e.g. origin."),
    url: str = typer.Argument(..., help="A path, or s3://bucket/prefix."),
    ledger: Path | None = LedgerOpt,
) -> None:
    """Remember URL as NAME in the ledger's config (no credentials are stored)."""
    from ..share.remote import add_remote

    add_remote(open_store(ledger), name, url)


@remote_app.command("list")
def remote_list(ledger: Path | None = LedgerOpt, json_out: bool = JsonOpt) -> None:
    """List the remotes and their URLs; the default one is marked."""
    from ..share.remote import default_remote, list_remotes

    store = open_store(ledger)
    remotes = list_remotes(store)
    if json_out:
        print_json(remotes)
        return
    default = default_remote(store)
    for name, url in sorted(remotes.items()):
        mark = "\t(default)" if name == default else ""
        out_console().print(f"{name}\t{url}{mark}", markup=False)


@remote_app.command("default")
def remote_default(
    name: str | None = typer.Argument(None, help="A configured remote's name."),
    unset: bool = typer.Option(False, "--unset", help="Have no default remote."),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Make NAME the remote `push` and `pull` use when given none (with one remote, that one
    is used anyway); with no NAME, print the default (`--json`: `{"default": NAME or null}`,
    exit 0 either way)."""
    from ..errors import UsageError
    from ..share.remote import default_remote, set_default_remote

    store = open_store(ledger)
    if unset and name is not None:
        raise UsageError("give NAME or --unset, not both")
    if unset or name is not None:
        set_default_remote(store, name)
        return
    found = default_remote(store)
    if json_out:
        print_json({"default": found})
        return
    if found is None:  # as `git config --get` of an unset key: nothing printed, exit 1
        err_console().print(
            "no default remote is set (`ledger remote default NAME` sets one)", markup=False
        )
        raise typer.Exit(1)
    out_console().print(found, markup=False)


@remote_app.command("remove")
def remote_remove(
    name: str = typer.Argument(..., help="The remote's name."), ledger: Path | None = LedgerOpt
) -> None:
    """Forget a remote (nothing on the remote is deleted)."""
    from ..share.remote import remove_remote

    remove_remote(open_store(ledger), name)


def push(
    remote: str | None = typer.Argument(
        None,
        help="A configured remote's name, or a path (./x, /x) or URL (s3://, file://). "
        "Default: the default remote, or the only one.",
    ),
    runs: list[str] | None = typer.Argument(None, metavar="[RUN]...", help="Default: every run."),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Send runs and everything they need to replay; only objects the remote lacks. A word
    that is no configured remote is refused (exit 2), never taken as a folder."""
    from ..share.remote import open_remote
    from ..share.transfer import push as do_push

    store = open_store(ledger)
    with progress_stages():
        report = do_push(store, open_remote(store, remote), runs)
    if json_out:
        print_json(report.__dict__)
        return
    out_console().print(
        f"Pushed {len(report.runs)} run(s): sent {report.sent} of {report.objects} objects "
        f"({report.bytes_sent} bytes), {report.refs} refs"
        + (f"; {report.replaced} damaged remote copies sent again" if report.replaced else ""),
        markup=False,
    )


def _print_pull(report: object, json_out: bool) -> None:
    from ..share.transfer import PullReport

    if not isinstance(report, PullReport):
        raise TypeError(f"not a pull report: {type(report).__name__}")
    refs = report.refs
    if json_out:
        print_json(
            {
                "origins": report.origins,
                "fetched": report.fetched,
                "bytes_fetched": report.bytes_fetched,
                "refs_added": refs.added,
                "refs_present": refs.present,
                "collisions": [{"ref": n, "here": h, "theirs": t} for n, h, t in refs.collisions],
                "notes": report.notes,
            }
        )
    else:
        con = out_console()
        con.print(
            f"Fetched {report.fetched} objects ({report.bytes_fetched} bytes) from "
            f"{len(report.origins)} ledger(s); {len(refs.added)} refs added, "
            f"{len(refs.present)} already here",
            markup=False,
        )
        for name, here, theirs in refs.collisions:
            con.print(
                f"collision: {name} is {here} here and {theirs} on the remote; kept this ledger's",
                markup=False,
            )
        for note in report.notes:
            con.print(f"note: {note}", markup=False)
    if refs.collisions:
        raise typer.Exit(1)


def pull(
    remote: str | None = typer.Argument(
        None,
        help="A configured remote's name, or a path (./x, /x) or URL (s3://, file://). "
        "Default: the default remote, or the only one.",
    ),
    runs: list[str] | None = typer.Argument(
        None,
        metavar="[RUN]...",
        help="Run ids, prefixes, short ids or names (with their replays, code). Default: all.",
    ),
    ledger: Path | None = LedgerOpt,
    json_out: bool = JsonOpt,
) -> None:
    """Fetch the runs every ledger pushed to REMOTE, hashing each object before it is added.
    Exit 1 if a ref collides with a different one here."""
    from ..share.remote import open_remote
    from ..share.transfer import pull as do_pull

    store = open_store(ledger)
    store.check_writable()
    with progress_stages():
        report = do_pull(store, open_remote(store, remote), runs)
    _print_pull(report, json_out)


def clone(
    url: str = typer.Argument(..., help="A path, or s3://bucket/prefix."),
    directory: Path | None = typer.Argument(None, metavar="[DIR]", help="Default: here."),
    json_out: bool = JsonOpt,
) -> None:
    """Create a ledger in DIR with URL as remote 'origin', and pull every run from it; a
    clone that fails leaves no ledger."""
    from ..share.clone import clone as do_clone

    with progress_stages():
        _store, report = do_clone(url, directory or Path.cwd())
    _print_pull(report, json_out)


def register(app: typer.Typer) -> None:
    app.add_typer(remote_app, name="remote")
    app.command()(push)
    app.command()(pull)
    app.command()(clone)
