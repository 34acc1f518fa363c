"""tests/_forkserver.py: ``run_ledger`` forks its calls from a server that imported ledger once;
a forked call must give what a started ``python -m ledger`` gives (exit status, stdout, stderr),
in the call's own working directory and environment, one result per call when threads call at
once, and a timeout that kills the call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _forkserver
import psutil
import pytest
from _support import init_ledger, run_ledger, start_ledger, subprocess_env


@pytest.fixture
def project(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    repo.mkdir()
    (repo / "train.py").write_text(
        "import sys\nprint('step 0 loss 1.5')\nsys.exit(int(sys.argv[1]))\n"
    )
    init_ledger(repo)
    for code in ("0", "3"):
        r = run_ledger(
            "record", "--name", f"exit{code}", "--", sys.executable, "train.py", code, cwd=repo
        )
        assert r.returncode == int(code), r.stderr
    return repo


_SERVED = pytest.mark.skipif(
    os.environ.get("LEDGER_TEST_FORKSERVER", "1") == "0", reason="LEDGER_TEST_FORKSERVER=0"
)

CASES = [
    ["--version"],
    ["--help"],
    ["ls"],
    ["ls", "--json"],
    ["show", "exit3", "--json"],
    ["show", "no-such-run"],
    ["bogus"],
    ["ls", "--limit", "x"],
    ["verify"],
    ["-L", "nowhere", "ls"],
]


def test_forked_calls_print_and_exit_as_started_ones(project: Path) -> None:
    for argv in CASES:
        forked = run_ledger(*argv, cwd=project)
        started = start_ledger(*argv, cwd=project)
        assert (forked.returncode, forked.stdout, forked.stderr) == (
            started.returncode,
            started.stdout,
            started.stderr,
        ), argv
        assert forked.args == started.args
    assert {run_ledger(*a, cwd=project).returncode for a in CASES} >= {0, 2, 3}


@_SERVED
def test_calls_are_forked_from_one_server(project: Path) -> None:
    run_ledger("--version", cwd=project)
    server = _forkserver._server["proc"]
    assert server.poll() is None
    assert _forkserver.MARK in psutil.Process(server.pid).cmdline()
    run_ledger("ls", cwd=project)
    assert _forkserver._server["proc"] is server  # not a second server


def test_a_call_has_its_own_directory_and_environment(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert run_ledger("ls", cwd=elsewhere).returncode == 3  # no ledger here
    r = run_ledger("ls", "--json", cwd=elsewhere, LEDGER_DIR=str(project / ".ledger"))
    assert r.returncode == 0, r.stderr
    assert sorted(x["name"] for x in json.loads(r.stdout)) == ["exit0", "exit3"]
    assert run_ledger("ls", cwd=elsewhere).returncode == 3  # the variable was the call's only


def test_threads_calling_at_once_each_get_their_own_result(project: Path) -> None:
    argvs = [["show", "exit0", "--json"], ["show", "exit3", "--json"], ["bogus"], ["--version"]] * 3
    results: dict[int, subprocess.CompletedProcess[str]] = {}

    def call(i: int) -> None:
        results[i] = run_ledger(*argvs[i], cwd=project)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(argvs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, argv in enumerate(argvs):
        r = results[i]
        assert r.args[3:] == argv
        if argv[0] == "show":
            assert r.returncode == 0 and json.loads(r.stdout)["run"]["name"] == argv[1]
        elif argv == ["bogus"]:
            assert r.returncode == 2 and "No such command 'bogus'" in r.stderr
        else:
            assert r.returncode == 0 and r.stdout.startswith("ledger ")


@_SERVED
def test_a_call_past_its_timeout_is_killed(project: Path) -> None:
    (project / "slow.py").write_text("import time\ntime.sleep(1.5)\n")
    args = ["record", "--", sys.executable, "slow.py"]
    with pytest.raises(subprocess.TimeoutExpired):
        _forkserver.run(args, str(project), subprocess_env(), subprocess_env(), timeout=0.3)
    # the server still serves
    assert run_ledger("--version", cwd=project).returncode == 0


def test_a_python_variable_of_its_own_starts_python(project: Path) -> None:
    r = run_ledger("--version", cwd=project, PYTHONPROFILEIMPORTTIME="1")
    assert "import time:" in r.stderr  # the interpreter started with the variable


@pytest.fixture
def fresh_server() -> Iterator[None]:
    """This worker's server is stopped after the test, and the next call starts a new one
    (a test that kills the server leaves the worker's later calls served again)."""
    yield
    _forkserver._stop()
    _forkserver._server.clear()


@_SERVED
def test_a_dead_server_falls_back_to_starting_python(
    project: Path, fresh_server: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run_ledger("--version", cwd=project).returncode == 0  # this worker's server is up
    server = _forkserver._server["proc"]
    server.kill()
    server.wait()
    started: list[list[str]] = []
    real_run = subprocess.run

    def spy(argv: list[str], *args: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        started.append(list(argv))
        return real_run(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", spy)
    for name in ("exit3", "exit0"):  # the call that finds the server dead, and the next one
        r = run_ledger("show", name, "--json", cwd=project)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["run"]["name"] == name
        assert r.args == [sys.executable, "-m", "ledger", "show", name, "--json"]
    # Both started Python (the fallback), none went to a server: none was started again.
    assert started == [
        [sys.executable, "-m", "ledger", "show", n, "--json"] for n in ("exit3", "exit0")
    ]
    assert _forkserver._server.get("gone") is True and _forkserver._server["proc"] is server
