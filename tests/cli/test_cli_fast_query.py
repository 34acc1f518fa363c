"""``ledger ls``, ``ledger show`` and ``ledger --version`` run without typer (ledger/cli/entry.py,
ledger/cli/query_cmd.py). The fast parser must read every argument list it takes on exactly as
the typer commands do and leave every other one to typer; and both paths must print the same
bytes, exit codes, errors and hints, for user text with markup and control characters too.
(Both paths print through ledger/cli/_printer.py; tests/cli/test_cli_printer.py holds its
plain output to what rich prints.)"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _cli_support import METRIC, make_project, on_a_terminal, run_ids
from _support import run_ledger, subprocess_env

from ledger.cli import run_cmds
from ledger.cli._choices import RunStatus
from ledger.cli.query_cmd import (
    STATUSES,
    LsArgs,
    ShowArgs,
    VersionArgs,
    parse_query_argv,
)

PY = sys.executable
# ``ledger.cli.app.main``: the typer path, whatever the arguments.
TYPER = "from ledger.cli.app import main; main()"


# The typer path of many argument lists from one start-up: a child imports the entry point
# once, then forks a process per argument list that runs it as ``python -c TYPER ARGV`` would
# (argv[0] "-c", the same working directory, environment and standard input, its own stdout
# and stderr, its exit status as the interpreter makes it from SystemExit or an uncaught
# exception): ~0.2 s of importing per list saved, 70 lists. Before forking it also imports
# modules each of these commands imports on its way (an import only: a child that needs one
# finds it loaded, as it would after importing it itself).
_FORKED = """
import contextlib, importlib, json, os, sys
from ledger.cli.app import main
for name in ("typer._adapters", "pydantic", "ledger.index.checked", "ledger.index.query",
             "ledger.run.find"):
    with contextlib.suppress(ImportError):
        importlib.import_module(name)
folder = sys.argv[1]
with open(os.path.join(folder, "cases.json")) as f:
    cases = json.load(f)
codes = []
for i, argv in enumerate(cases):
    pid = os.fork()
    if pid == 0:
        for fd, name in ((1, f"{i}.out"), (2, f"{i}.err")):
            new = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(new, fd)
            os.close(new)
        sys.argv = ["-c", *argv]
        main()
        raise SystemExit(0)  # the end of `python -c TYPER`: the interpreter exits 0
    codes.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
print(json.dumps(codes))
"""


def typer_paths(
    cases: list[list[str]], cwd: Path, folder: Path
) -> list[subprocess.CompletedProcess[str]]:
    """What ``python -c TYPER ARGV`` prints and exits with, for each ARGV of ``cases``."""
    folder.mkdir()
    (folder / "cases.json").write_text(json.dumps(cases))
    r = subprocess.run(
        [PY, "-c", _FORKED, str(folder)],
        cwd=cwd,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0 and not r.stderr, r.stderr
    codes = json.loads(r.stdout)
    assert len(codes) == len(cases)
    return [
        subprocess.CompletedProcess(
            ["-c", TYPER, *argv],
            code,
            (folder / f"{i}.out").read_text(),
            (folder / f"{i}.err").read_text(),
        )
        for i, (argv, code) in enumerate(zip(cases, codes, strict=True))
    ]


@pytest.fixture(scope="module")
def ledger_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Runs with awkward names, tags and commands, a config, a failed run and a replay."""
    repo = make_project(tmp_path_factory.mktemp("fastq"))
    (repo / "cfg.json").write_text(json.dumps({"lr": 0.1, "opt": {"name": "[adam]\tx"}}))
    (repo / "fail.py").write_text("import sys\nsys.exit(3)\n")
    runs = [
        ["--name", "baseline", "--tag", "k=v", "-c", "cfg.json", "-m", METRIC, "--", PY,
         "train.py"],
        ["--name", "run[0] [red]", "--tag", "split=[train]", "--", PY, "train.py", "[bold]x[/]",
         "a\tb", "\x1b[31mred"],
        ["--name", "中文 🙂 e\u0301", "--tag", "k=a\tb\nc", "--", PY, "train.py"],
        ["--name", "ok\n fake0  run  succeeded\x07", "--", PY, "fail.py"],
        ["--", PY, "train.py"],
    ]  # fmt: skip
    for args in runs:
        r = run_ledger("record", *args, cwd=repo)
        assert r.returncode in (0, 3), r.stderr
    r = run_ledger("replay", "baseline", cwd=repo)
    assert r.returncode == 0, r.stdout + r.stderr
    return repo


def _cases(repo: Path) -> list[list[str]]:
    ids = run_ids(repo)
    first = ids[0]
    contract = json.loads(run_ledger("ls", "--json", cwd=repo).stdout)[0]["contract_digest"]
    return [
        ["ls"],
        ["ls", "--json"],
        ["ls", "--limit", "1"],
        ["ls", "--limit=2", "--name", "baseline"],
        ["ls", "--name=run[0] [red]", "--replays"],
        ["ls", "--status", "succeeded", "--status", "failed"],
        ["ls", "--status", "killed"],
        ["ls", "--tag", "k=v", "--tag", "k=v"],
        ["ls", "--tag", "bad"],
        ["ls", "--contract", contract[3:12]],
        ["ls", "--contract", "b3:0000"],
        ["ls", "--replays"],
        ["ls", "--replays", "--json", "--json"],
        ["ls", "-w", "params.lr > 0.01"],
        ["ls", "--where", "params.lr < 0.01", "-w", "status = succeeded"],
        ["ls", "-w", "no operator"],
        ["ls", "--columns", "name,params.lr,params.opt.name,metrics.loss.last"],
        ["ls", "--columns", "name,tags.k,status", "--replays"],
        ["ls", "--columns", "bogus.field"],
        ["-L", ".ledger", "ls"],
        ["--ledger=.ledger", "ls", "-L", "no-such-ledger"],
        ["ls", "-L", "no-such-ledger"],
        ["ls", "--ledger", "cfg.json"],
        ["show", first],
        ["show", first, "--json"],
        ["show", "baseline"],
        ["--ledger", ".ledger", "show", "run[0] [red]"],
        ["show", "中文 🙂 e\u0301"],
        ["show", ids[3]],
        ["show", ids[4][:10]],
        ["show", ids[-1]],  # the replay
        ["show", "2"],  # a prefix of every id: ambiguous
        ["show", "no-such-run"],
        ["show"],  # the newest run: the replay
        ["show", "--json"],
        ["show", "-L", "no-such-ledger", "x"],
        ["--version"],
        ["-L", "x", "--version"],
        ["--version", "ls", "--bogus"],
    ]


# Forms the fast parser leaves to typer: help, usage errors, anything unusual.
LEFT_TO_TYPER = [
    [],
    ["--help"],
    ["-h"],
    ["ls", "--help"],
    ["ls", "-h"],
    ["show", "--help"],
    ["show", "a", "b"],
    ["show", "--", "-x"],
    ["show", "-"],
    ["ls", "extra"],
    ["ls", "--limit", "0"],
    ["ls", "--limit", "x"],
    ["ls", "--limit", "-1"],
    ["ls", "--limit", "+1"],
    ["ls", "--status", "bogus"],
    ["ls", "--status", "Succeeded"],
    ["ls", "-wparams.lr>1"],
    ["ls", "--name"],
    ["ls", "--name", ""],
    ["ls", "--name="],
    ["ls", "--name", "-x"],
    ["ls", "--json=1"],
    ["ls", "--bogus"],
    ["ls", "-n", "3"],
    ["ls", "--lim", "3"],
    ["-L"],
    ["-L", "x"],
    ["--ledger", "-x", "ls"],
    ["--json", "show", "x"],
    ["--version", "--help"],
    ["-L", "x", "log", "y"],
    ["record", "--", "x"],
]


@pytest.fixture(scope="module")
def fast_outputs(ledger_repo: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    """What ``python -m ledger`` prints for each case, run once for the two tests below."""
    return {" ".join(a): run_ledger(*a, cwd=ledger_repo) for a in _cases(ledger_repo)}


def test_both_paths_print_the_same_bytes(
    ledger_repo: Path,
    fast_outputs: dict[str, subprocess.CompletedProcess[str]],
    tmp_path: Path,
) -> None:
    cases = _cases(ledger_repo)
    assert len(fast_outputs) == len(cases)  # no two cases share a command line
    every = [*cases, *LEFT_TO_TYPER]
    typer = typer_paths(every, ledger_repo, tmp_path / "typer")
    for argv, slow in zip(every, typer, strict=True):
        fast = fast_outputs.get(" ".join(argv)) or run_ledger(*argv, cwd=ledger_repo)
        what = f"ledger {' '.join(argv)}"
        assert (fast.returncode, fast.stdout, fast.stderr) == (
            slow.returncode,
            slow.stdout,
            slow.stderr,
        ), what
        assert "Traceback" not in fast.stderr, what


def test_the_cases_cover_output_errors_and_hints(
    ledger_repo: Path, fast_outputs: dict[str, subprocess.CompletedProcess[str]]
) -> None:
    """The comparison above means something: it sees tables, JSON, errors with their hints and
    exit codes, user text as written, and every case takes the fast path."""
    cases = _cases(ledger_repo)
    assert all(parse_query_argv(argv) is not None for argv in cases)
    out = fast_outputs
    assert "run[0] [red]" in out["ls"].stdout and "split=[train]" in out["ls"].stdout
    assert "ok\\x0a fake0  run  succeeded\\x07" in out["ls"].stdout
    assert "中文 🙂 e\u0301" in out["ls"].stdout
    assert "↳ " in out["ls --replays"].stdout
    shown = out["--ledger .ledger show run[0] [red]"].stdout
    assert "train.py [bold]x[/] a" in shown and "\\x1b[31mred" in shown
    assert out["ls --tag bad"].returncode == 2
    assert "is not KEY=VALUE" in out["ls --tag bad"].stderr
    assert out["show no-such-run"].returncode == 2
    assert "ledger: hint: `ledger ls` lists runs" in out["show no-such-run"].stderr
    assert "ledger: hint: give more characters" in out["show 2"].stderr
    assert out["ls -L no-such-ledger"].returncode != 0
    assert out["--version"].stdout.startswith("ledger ")
    assert json.loads(out["ls --json"].stdout)


def _monkey_body(
    monkeypatch: pytest.MonkeyPatch, cli: Callable[..., Any], name: str, argv: list[str]
) -> Any:
    seen: list[Any] = []
    monkeypatch.setattr(run_cmds, name, seen.append)
    result = cli(*argv)
    assert result.exit_code == 0, result
    assert len(seen) == 1
    return seen[0]


PARSED = [
    ["ls"],
    ["ls", "--name", "a", "--name=b", "--status", "failed", "--tag", "x=1", "--tag=y=2"],
    ["ls", "--contract", "ab12", "--limit", "007", "--replays", "-w", "a = 1", "--where=b > 2"],
    ["ls", "--columns", "name,params.lr", "--json", "-L", "d1"],
    ["-L", "d0", "ls", "--ledger", "d1"],
    ["--ledger=d0", "ls"],
    ["-L", "d0", "-L", "d2", "ls"],
    ["show", "run"],
    ["show", "--json", "run", "-L", "d1"],
    ["-L", "d0", "show", "[bold]"],
]


@pytest.mark.parametrize("argv", PARSED, ids=[" ".join(a) for a in PARSED])
def test_fast_parser_reads_as_typer_does(
    argv: list[str], cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = parse_query_argv(argv)
    assert isinstance(fast, LsArgs | ShowArgs)
    slow = _monkey_body(monkeypatch, cli, "run_ls" if argv.count("ls") else "run_show", argv)
    assert fast == slow


@pytest.mark.parametrize("argv", LEFT_TO_TYPER, ids=[" ".join(a) or "-" for a in LEFT_TO_TYPER])
def test_other_forms_are_left_to_typer(argv: list[str]) -> None:
    assert parse_query_argv(argv) is None


def test_version_is_eager_like_typer() -> None:
    assert isinstance(parse_query_argv(["--version"]), VersionArgs)
    assert isinstance(parse_query_argv(["-L", "x", "--version", "show"]), VersionArgs)


def test_status_choices_are_the_typer_ones() -> None:
    assert tuple(s.value for s in RunStatus) == STATUSES


IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s+(\S+)$", re.M)


NO_UI = ("typer", "click", "rich.console", "rich.table")  # rich.cells measures non-ASCII text


@pytest.mark.parametrize(
    "argv,absent",
    [
        (["ls"], (*NO_UI, "pydantic")),
        (["ls", "--name", "baseline"], ("typer", "click", "rich", "pydantic")),
        (["ls", "--json", "-w", "params.lr > 0"], ("typer", "click", "rich", "pydantic")),
        (["ls", "--columns", "name,params.lr"], (*NO_UI, "pydantic")),
        (["show", "baseline"], NO_UI),
        (["show", "baseline", "--json"], ("typer", "click", "rich")),
        (["--version"], ("typer", "click", "rich", "pydantic", "blake3", "sqlite3")),
    ],
)
def test_the_fast_path_imports_no_typer(
    ledger_repo: Path, argv: list[str], absent: tuple[str, ...]
) -> None:
    r = run_ledger(*argv, cwd=ledger_repo, PYTHONPROFILEIMPORTTIME="1")
    assert r.returncode == 0, r.stderr
    names = set(IMPORTED.findall(r.stderr))
    assert "ledger.cli.query_cmd" in names or argv == ["--version"], "-X importtime did not apply"
    loaded = {a for a in absent for n in names if n == a or n.startswith(a + ".")}
    assert not loaded, sorted(loaded)


def _on_a_terminal(argv: list[str], cwd: Path, typer: bool) -> bytes:
    """What a command writes to a terminal 100 columns wide."""
    return on_a_terminal(argv, cwd, typer=typer)[1]


def test_both_paths_draw_the_same_on_a_terminal(ledger_repo: Path) -> None:
    for argv in (["ls", "--replays"], ["show", "run[0] [red]"], ["ls", "--columns", "name"]):
        fast = _on_a_terminal(argv, ledger_repo, typer=False)
        assert b"\x1b[" in fast, "no styles: not drawn for a terminal"
        assert fast == _on_a_terminal(argv, ledger_repo, typer=True), argv
