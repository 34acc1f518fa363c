"""The fork server of ``scripts/mutation.py`` (issue #18): each mutant's tests run in a child
forked from a warm process, and must judge a mutant exactly as a fresh ``python -m pytest``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
sys.path.insert(0, str(SCRIPTS))

import mutation  # noqa: E402
from mutation_harness import fork as harness_fork  # noqa: E402
from mutation_harness import mutate, run  # noqa: E402
from mutation_harness.fork import ForkServer, shared_modules  # noqa: E402

# heavy: the mutation harness's own fork server (a development tool, not ledger): an inner
# pytest per test, 446 s of one worker in a run on a loaded 2-core machine, 183 s of it the
# four harness runs of test_a_survivor_... `make test-heavy` and CI run it; the harness's
# selection and operators (test_mutation_select.py, test_mutation_operators.py) stay in
# `make test`.
pytestmark = [pytest.mark.heavy]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A tiny checkout: a package whose value the test checks, imported at collection."""
    copy = tmp_path / "copy"
    (copy / "pkgx").mkdir(parents=True)
    (copy / "pkgx" / "__init__.py").write_text("")
    (copy / "pkgx" / "mod.py").write_text("VALUE = 1\n")
    (copy / "tests").mkdir()
    (copy / "tests" / "test_value.py").write_text(
        textwrap.dedent(
            """\
            import json  # outside the checkout: shared

            from pkgx.mod import VALUE


            def test_value():
                assert VALUE == 1
            """
        )
    )
    return copy


@pytest.fixture
def server(checkout: Path) -> Iterator[ForkServer]:
    env = mutation._pytest_env(checkout)
    preload = shared_modules(checkout, mutation._pytest_args(checkout, ["tests"]), env, 120)
    srv = ForkServer(checkout, env, preload)
    try:
        yield srv
    finally:
        srv.close()
    assert srv.proc.returncode is not None


def test_shared_modules_are_those_outside_the_checkout(checkout: Path) -> None:
    env = mutation._pytest_env(checkout)
    names = shared_modules(checkout, ["tests"], env, 120)
    assert "json" in names and "pytest" in names
    assert not [n for n in names if n.split(".")[0] in ("pkgx", "test_value", "conftest")]
    # pytest rewrites the asserts of plugin distributions: none of them is preloaded
    assert not [n for n in names if n.split(".")[0] in ("hypothesis", "anyio")]


def test_a_failed_collection_preloads_nothing(checkout: Path) -> None:
    (checkout / "tests" / "test_value.py").write_text("import no_such_module_here\n")
    env = mutation._pytest_env(checkout)
    assert shared_modules(checkout, ["tests"], env, 120) == []


def test_each_forked_run_imports_the_checkout_as_it_is_now(
    checkout: Path, server: ForkServer
) -> None:
    assert server.ok
    assert _outcome(server, checkout) == "survived"
    (checkout / "pkgx" / "mod.py").write_text("VALUE = 2\n")  # the mutant
    outcome = mutation._forked_pytest(server, checkout, ["tests"], 60)
    assert outcome is not None and outcome[0] == "killed"
    (checkout / "pkgx" / "mod.py").write_text("VALUE = 1\n")
    outcome = mutation._forked_pytest(server, checkout, ["tests"], 60)
    assert outcome is not None and outcome[0] == "survived"
    # and a plain run agrees on both
    assert mutation._pytest(checkout, ["tests"], 60)[0] == "survived"


def test_a_mutant_that_breaks_the_import_is_killed(checkout: Path, server: ForkServer) -> None:
    (checkout / "pkgx" / "mod.py").write_text("VALUE = (\n")
    outcome = mutation._forked_pytest(server, checkout, ["tests"], 60)
    assert outcome is not None and outcome[0] == "killed"  # a collection error: exit code 2


def test_a_hang_is_stopped_with_everything_it_started(
    checkout: Path, server: ForkServer, tmp_path: Path
) -> None:
    pid_file = tmp_path / "grandchild.pid"
    (checkout / "tests" / "test_value.py").write_text(
        textwrap.dedent(
            f"""\
            import subprocess, sys, time


            def test_hangs():
                p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
                open({str(pid_file)!r}, "w").write(str(p.pid))
                time.sleep(600)
            """
        )
    )
    # The test sleeps 600 s: the outcome says the 3 s timeout stopped it.
    outcome = mutation._forked_pytest(server, checkout, ["tests"], 3)
    assert outcome is not None and outcome[0] == "killed-timeout"
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 60
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)
    # the server is still there for the next mutant
    (checkout / "tests" / "test_value.py").write_text("def test_ok():\n    pass\n")
    assert _outcome(server, checkout) == "survived"


@pytest.mark.parametrize("forked", [True, False])
def test_a_process_the_tests_started_in_a_session_of_its_own_is_stopped_too(
    checkout: Path, server: ForkServer, tmp_path: Path, forked: bool
) -> None:
    """``ledger record`` starts the recorded program in a session of its own, out of the
    run's, which is all the harness's ``killpg`` stops: a mutant's run stopped by its timeout
    left such programs running for 20 minutes (7 December). They carry the run's mark."""
    pid_file = tmp_path / "detached.pid"
    (checkout / "tests" / "test_value.py").write_text(
        textwrap.dedent(
            f"""\
            import subprocess, sys, time


            def test_hangs():
                p = subprocess.Popen(
                    [sys.executable, "-c", "import time; time.sleep(600)"],
                    start_new_session=True,
                )
                open({str(pid_file)!r}, "w").write(str(p.pid))
                time.sleep(600)
            """
        )
    )
    if forked:
        outcome = mutation._forked_pytest(server, checkout, ["tests"], 3)
        assert outcome is not None and outcome[0] == "killed-timeout"
    else:
        assert mutation._pytest(checkout, ["tests"], 3)[0] == "killed-timeout"
    detached = int(pid_file.read_text())
    deadline = time.monotonic() + 60
    while _alive(detached) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = _alive(detached)
    if alive:
        os.kill(detached, 9)
    assert not alive


def _outcome(server: ForkServer, checkout: Path) -> str | None:
    done = mutation._forked_pytest(server, checkout, ["tests"], 60)
    return None if done is None else done[0]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_an_exit_code_that_is_not_a_test_failure_is_not_counted_as_a_kill(
    checkout: Path, server: ForkServer
) -> None:
    # "no tests ran" (5) and a usage error (4) say nothing about the mutant
    assert mutation._forked_pytest(server, checkout, ["tests/test_value.py::nothing"], 60) is None
    assert mutation._forked_pytest(server, checkout, ["--no-such-option"], 60) is None


def test_a_server_whose_preloading_started_a_thread_forks_nothing(
    checkout: Path, tmp_path: Path
) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "starts_a_thread.py").write_text(
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
    )
    env = {**mutation._pytest_env(checkout), "PYTHONPATH": f"{checkout}{os.pathsep}{lib}"}
    srv = ForkServer(checkout, env, ["json", "starts_a_thread"])
    assert not srv.ok and srv.threads == 2
    assert srv.proc.returncode is not None  # closed, nothing left running


def test_tests_that_fail_only_when_forked_turn_forking_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test that tells a preloaded module apart (here: by the process that imported it)
    would kill every mutant in a forked run. No forked baseline of every mapped test runs
    first (the coverage pass is the baseline): the first forked kill runs its failing test
    forked without the mutant, which fails too, so that mutant and the rest run plainly, and
    the next run of the module does not fork at all."""
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "where_loaded.py").write_text("import os\nPID = os.getpid()\n")
    repo = tmp_path / "repo"
    (repo / "pkgw").mkdir(parents=True)
    (repo / "pkgw" / "__init__.py").write_text("")
    (repo / "pkgw" / "mod.py").write_text(
        "def value():\n    return 1\n\n\ndef unchecked():\n    return 7\n"
    )
    (repo / "tests").mkdir()
    (repo / "tests" / "test_value.py").write_text(
        "import os\n\nimport where_loaded\n\nfrom pkgw.mod import unchecked, value\n\n\n"
        "def test_value():\n    unchecked()\n    assert value() == 1\n"
        "    assert where_loaded.PID == os.getpid()\n"
    )
    original = run._pytest_env

    def env_with_lib(copy: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = original(copy, extra)
        return {**env, "PYTHONPATH": f"{env['PYTHONPATH']}{os.pathsep}{lib}"}

    monkeypatch.setattr(run, "_pytest_env", env_with_lib)
    monkeypatch.setattr(run, "REPO", repo)
    monkeypatch.setattr(mutate, "REPO", repo)
    out = tmp_path / "results"
    opts = mutation.Options(tests=["tests/test_value.py"], cache=False)
    summary = mutation.run_module("pkgw/mod.py", out_dir=out, opts=opts)
    outcome = {r["mutation"]: r["outcome"] for r in summary["results"]}
    assert outcome["1 -> 2"] == "killed"
    assert outcome["7 -> 8"] == "survived"  # not killed by the fork
    (entry,) = mutation._load_json(out / "cache" / "fork-baselines.json").values()
    assert entry["ok"] is False


def test_a_forked_kill_is_confirmed_by_its_failing_test_alone_once(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where forked runs are sound, a kill is confirmed by running the test that failed,
    forked and unmutated: that test alone (not every mapped test), and once per tree."""
    (checkout / "pkgx" / "mod.py").write_text("VALUE = 1\nOTHER = 2\n")
    (checkout / "tests" / "test_value.py").write_text(
        "from pkgx.mod import OTHER, VALUE\n\n\n"
        "def test_value():\n    assert VALUE == 1\n\n\n"
        "def test_other():\n    assert OTHER == 2\n"
    )
    monkeypatch.setattr(run, "REPO", checkout)
    monkeypatch.setattr(mutate, "REPO", checkout)
    confirmed: list[list[str]] = []
    forked = run._forked_pytest

    def spy(server: ForkServer, copy: Path, args: list[str], *rest: Any, **kw: Any) -> Any:
        if (copy / "pkgx" / "mod.py").read_text() == "VALUE = 1\nOTHER = 2\n":
            confirmed.append(args)  # a run of the unmutated module
        return forked(server, copy, args, *rest, **kw)

    monkeypatch.setattr(run, "_forked_pytest", spy)
    out = tmp_path / "results"
    opts = mutation.Options(tests=["tests/test_value.py"], select=False, cache=False)
    summary = mutation.run_module("pkgx/mod.py", out_dir=out, opts=opts)
    outcome = {r["mutation"]: r["outcome"] for r in summary["results"]}
    assert outcome == {"1 -> 2": "killed", "2 -> 3": "killed"}
    assert confirmed == [
        ["tests/test_value.py::test_value"],
        ["tests/test_value.py::test_other"],
    ]
    (entry,) = mutation._load_json(out / "cache" / "fork-baselines.json").values()
    assert entry["ok"] is True and len(entry["passed"]) == 2
    confirmed.clear()
    mutation.run_module("pkgx/mod.py", out_dir=out, opts=opts)
    assert confirmed == []  # known from the first run


def test_a_thread_that_keeps_the_process_alive_is_a_hang_forked_as_plainly(
    checkout: Path, server: ForkServer, tmp_path: Path
) -> None:
    """A forked child leaves through ``os._exit``; before that it waits for its non-daemon
    threads and runs the atexit handlers, as an interpreter's exit does. A mutant that turns a
    background worker into a non-daemon thread must hang in both modes."""
    marker = tmp_path / "atexit-ran"
    (checkout / "tests" / "test_value.py").write_text(
        textwrap.dedent(
            f"""\
            import atexit, pathlib, threading, time

            from pkgx.mod import VALUE


            def test_starts_a_worker():
                atexit.register(pathlib.Path({str(marker)!r}).write_text, "yes")
                daemon = VALUE == 1  # the mutant (VALUE = 2) makes it keep the process alive
                threading.Thread(target=time.sleep, args=(600,), daemon=daemon).start()
            """
        )
    )
    assert _outcome(server, checkout) == "survived"
    assert marker.read_text() == "yes"  # the handler ran in the forked child
    (checkout / "pkgx" / "mod.py").write_text("VALUE = 2\n")
    outcome = mutation._forked_pytest(server, checkout, ["tests"], 5)
    assert outcome is not None and outcome[0] == "killed-timeout"
    assert mutation._pytest(checkout, ["tests"], 5)[0] == "killed-timeout"


def test_a_survivor_of_the_selected_tests_is_run_against_every_mapped_test(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A value computed once per process is covered only by the first test that asks for it;
    a mutant there is selected for that test alone. It is killed by a later test, which the
    confirming run of every mapped test finds; a true survivor is reported as such."""
    repo = tmp_path / "repo"
    (repo / "pkgy").mkdir(parents=True)
    (repo / "pkgy" / "__init__.py").write_text("")
    (repo / "pkgy" / "lazy.py").write_text(
        textwrap.dedent(
            """\
            _cache = {}


            def answer():
                if "v" not in _cache:
                    _cache["v"] = 40 + 2
                return _cache["v"]


            def unchecked():
                return 7
            """
        )
    )
    (repo / "tests").mkdir()
    (repo / "tests" / "test_first.py").write_text(
        "from pkgy.lazy import answer, unchecked\n\n\n"
        "def test_first():\n    assert answer() is not None\n    unchecked()\n"
    )
    (repo / "tests" / "test_second.py").write_text(
        "from pkgy.lazy import answer\n\n\ndef test_second():\n    assert answer() == 42\n"
    )
    monkeypatch.setattr(run, "REPO", repo)  # the checkout copied, its tests hashed
    monkeypatch.setattr(mutate, "REPO", repo)  # the module mutated
    tests = ["tests/test_first.py", "tests/test_second.py"]
    out = tmp_path / "results"
    opts = mutation.Options(tests=tests, fork=False)
    summary = mutation.run_module("pkgy/lazy.py", out_dir=out, opts=opts)
    by_line = {}
    for r in summary["results"]:
        by_line.setdefault(r["line"], []).append(r)
    plus = next(r for r in by_line[6] if r["mutation"] == "40 + 2 -> 40 - 2")
    assert plus["tests"] == 1  # the selection picked test_first alone
    assert plus["outcome"] == "killed" and plus["missed"] is True
    seven = next(r for r in by_line[11] if r["mutation"] == "7 -> 8")
    assert seven["outcome"] == "survived" and seven["missed"] is False
    assert summary["selection_missed"] >= 1
    # a rerun takes the confirmed survivor from the cache, until a mapped test changes
    again = mutation.run_module("pkgy/lazy.py", out_dir=out, opts=opts)
    seven = next(r for r in again["results"] if r["line"] == 11 and r["mutation"] == "7 -> 8")
    assert seven.get("cached") is True
    # a change to a test the selection did not pick still reruns it: its survival was
    # confirmed against every mapped test, and one of them is no longer the same
    with open(repo / "tests" / "test_second.py", "a") as f:
        f.write("# edited\n")
    fourth = mutation.run_module("pkgy/lazy.py", out_dir=out, opts=opts)
    seven = next(r for r in fourth["results"] if r["line"] == 11 and r["mutation"] == "7 -> 8")
    assert seven["outcome"] == "survived" and not seven.get("cached")
    (repo / "tests" / "test_second.py").write_text(
        "from pkgy.lazy import answer, unchecked\n\n\n"
        "def test_second():\n    assert answer() == 42\n    assert unchecked() == 7\n"
    )
    third = mutation.run_module("pkgy/lazy.py", out_dir=out, opts=opts)
    seven = next(r for r in third["results"] if r["line"] == 11 and r["mutation"] == "7 -> 8")
    assert seven["outcome"] == "killed" and not seven.get("cached")


@pytest.mark.slow  # two module runs, one with a fork server
def test_a_kill_keeps_the_last_lines_of_the_run_that_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A killed mutant's result keeps the end of its tests' output, which names the failing
    test: a kill that the load, not the mutant, caused can be told apart afterwards."""
    repo = tmp_path / "repo"
    (repo / "pkgz").mkdir(parents=True)
    (repo / "pkgz" / "__init__.py").write_text("")
    (repo / "pkgz" / "limit.py").write_text("def limit():\n    return 3\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_limit.py").write_text(
        "from pkgz.limit import limit\n\n\ndef test_the_limit_is_three():\n"
        "    assert limit() == 3\n"
    )
    monkeypatch.setattr(run, "REPO", repo)
    monkeypatch.setattr(mutate, "REPO", repo)
    for fork in (False, True):
        opts = mutation.Options(tests=["tests/test_limit.py"], fork=fork, cache=False)
        summary = mutation.run_module("pkgz/limit.py", out_dir=tmp_path / "out", opts=opts)
        three = next(r for r in summary["results"] if r["mutation"] == "3 -> 4")
        assert three["outcome"] == "killed"
        assert any(
            "FAILED tests/test_limit.py::test_the_limit_is_three" in line for line in three["tail"]
        ), (fork, three["tail"])


def test_a_mutant_stopped_by_a_test_s_limit_names_that_test_not_the_confirming_run_s(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forked kill is confirmed by a forked run of the unmutated module, which runs every
    test of the mutant's run: the test the result names is the one the mutant hung in, not
    the last one the confirming run started (both once wrote the same progress file)."""
    from mutation_harness import selection

    repo = tmp_path / "repo"
    (repo / "pkgw").mkdir(parents=True)
    (repo / "pkgw" / "__init__.py").write_text("")
    (repo / "pkgw" / "spin.py").write_text(
        "def spin(n):\n    while n != 0:\n        n -= 1\n    return n\n"
    )
    (repo / "tests").mkdir()
    (repo / "tests" / "test_spin.py").write_text(
        "from pkgw.spin import spin\n\n\ndef test_first():\n    assert spin(3) == 0\n\n\n"
        "def test_second():\n    assert spin(1) == 0\n"
    )
    monkeypatch.setattr(run, "REPO", repo)
    monkeypatch.setattr(mutate, "REPO", repo)
    monkeypatch.setattr(selection, "TEST_LIMIT_MIN_S", 2.0)
    opts = mutation.Options(tests=["tests/test_spin.py"], fork=True, cache=False)
    summary = mutation.run_module("pkgw/spin.py", out_dir=tmp_path / "out", opts=opts)
    # line 3's mutants run both tests, and one that spins hangs in the first (``1 -> 2``: 3,
    # 1, -1, ...); the first such kill is confirmed by a run of both, which ends in the second
    hangs = [r for r in summary["results"] if r["outcome"] == "killed-timeout"]
    assert any(r["line"] == 3 and r["mutation"] == "1 -> 2" for r in hangs), hangs
    assert {r["test"] for r in hangs} == {"tests/test_spin.py::test_first"}


def test_a_run_stopped_by_the_timeout_keeps_what_it_printed(
    checkout: Path, server: ForkServer, tmp_path: Path
) -> None:
    """A timeout's kept lines show how far the run got: here one test passed, then it hung."""
    (checkout / "tests" / "test_value.py").write_text(
        "import time\n\n\ndef test_quick():\n    pass\n\n\n"
        "def test_hangs_here():\n    time.sleep(600)\n"
    )
    log = tmp_path / "run.log"
    outcome = mutation._forked_pytest(server, checkout, ["tests"], 20, log)
    assert outcome is not None and outcome[0] == "killed-timeout"
    assert run._tail(log)[-1].startswith(".")  # test_quick's dot, then nothing


def test_a_test_past_its_own_limit_stops_the_run_long_before_its_timeout(
    checkout: Path, server: ForkServer, tmp_path: Path
) -> None:
    """A mutant that hangs one test of many (a read loop that never ends) is stopped once
    that test has had its own limit, not the run's timeout (three times every selected test:
    over 30 minutes of one mutant on 7 December), and the result names the test it hung in."""
    (checkout / "tests" / "test_value.py").write_text(
        "import time\n\n\ndef test_quick():\n    pass\n\n\n"
        "def test_hangs_here():\n    time.sleep(600)\n"
    )
    limits = {"tests/test_value.py::test_quick": 2.0, "tests/test_value.py::test_hangs_here": 2.0}
    t0 = time.monotonic()
    outcome = mutation._forked_pytest(server, checkout, ["tests"], 120, None, None, limits)
    assert outcome is not None and outcome[0] == "killed-timeout"
    assert time.monotonic() - t0 < 60  # the run's own timeout is 120 s
    assert run.last_test(run.progress_of(checkout)) == "tests/test_value.py::test_hangs_here"


def test_each_test_has_its_limit_from_its_own_start_and_a_test_without_one_has_none(
    checkout: Path, server: ForkServer
) -> None:
    """Two tests of 1.5 s under limits of 2.5 s each pass (their 3 s together are no one
    test's); a test the limits do not name (not in the coverage pass) runs on to its end."""
    (checkout / "tests" / "test_value.py").write_text(
        "import time\n\n\ndef test_first():\n    time.sleep(1.5)\n\n\n"
        "def test_second():\n    time.sleep(1.5)\n\n\n"
        "def test_unnamed():\n    time.sleep(3)\n"
    )
    limits = {"tests/test_value.py::test_first": 2.5, "tests/test_value.py::test_second": 2.5}
    outcome = mutation._forked_pytest(server, checkout, ["tests"], 60, None, None, limits)
    assert outcome is not None and outcome[0] == "survived"


# The timeout counts the time a run had (wall time less the time it waited for a CPU), not
# wall time: a run starved by other work on the machine is not a hang (round 9 of
# docs/mutation.md counted 18 such as kills). Until 6 December it was wall time.


def _starved(sid: int) -> dict[int, tuple[bool, int]]:
    """What ``/proc`` says of a run that waits for a CPU and never gets one: runnable, no CPU."""
    return {sid: (True, 0)}


def test_a_run_starved_of_cpu_is_not_a_hang(
    checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test that takes 4 s of wall time, all of it (says the kernel) waiting for a CPU, runs
    to its end under a 2 s timeout, and its outcome is its own."""
    (checkout / "tests" / "test_value.py").write_text(
        "import time\n\nfrom pkgx.mod import VALUE\n\n\n"
        "def test_value():\n    time.sleep(4)\n    assert VALUE == 1\n"
    )
    monkeypatch.setattr(harness_fork, "session_tasks", _starved, raising=False)
    assert mutation._pytest(checkout, ["tests"], 2)[0] == "survived"
    (checkout / "pkgx" / "mod.py").write_text("VALUE = 2\n")
    assert mutation._pytest(checkout, ["tests"], 2)[0] == "killed"


def test_a_run_starved_past_the_backstop_is_not_a_result(
    checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Wall time still ends a run, at the backstop; what it gives is ``starved`` (not run)."""
    (checkout / "tests" / "test_value.py").write_text(
        "import time\n\n\ndef test_value():\n    time.sleep(600)\n"
    )
    monkeypatch.setattr(harness_fork, "session_tasks", _starved, raising=False)
    monkeypatch.setattr(harness_fork, "BACKSTOP_MIN", 3.0, raising=False)
    t0 = time.monotonic()
    assert mutation._pytest(checkout, ["tests"], 1)[0] == "starved"
    assert time.monotonic() - t0 < 60


def test_the_clock_counts_sleep_in_full_and_a_wait_for_the_cpu_not_at_all() -> None:
    """A deadlock (every thread asleep) has all the time; a thread always runnable that gets
    the CPU half the time, half of it; no ``/proc`` to read, wall time."""
    start = time.monotonic_ns()

    def asleep(sid: int) -> dict[int, tuple[bool, int]]:
        return {sid: (False, 0)}

    def half(sid: int) -> dict[int, tuple[bool, int]]:
        return {sid: (True, (time.monotonic_ns() - start) // 2)}

    def silent(sid: int) -> None:
        return None

    for sample, least in ((asleep, 1.0), (half, 2.0), (silent, 1.0)):
        t0 = time.monotonic()
        start = time.monotonic_ns()
        stopped = harness_fork.wait_run(7, 1.0, lambda s: bool(time.sleep(s)), sample)
        wall = time.monotonic() - t0
        assert stopped == "timeout" and least - 0.1 <= wall < least + 5, (sample, wall)
    # a run that ends in time is not stopped
    assert harness_fork.wait_run(7, 5.0, lambda s: True, asleep) is None


def test_a_forked_run_starved_of_cpu_by_other_work_is_not_a_hang(
    checkout: Path, server: ForkServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Real starvation: the test moves to one CPU where a busy loop runs, lowers itself to
    SCHED_IDLE and stays runnable there for 6 s of wall time under a 5 s timeout, getting a
    small share of the CPU (half at most, with autogroup scheduling). The wall-clock timeout
    of round 9 killed it. On a loaded machine (other work on that CPU too) a SCHED_IDLE run
    may get so little CPU that it cannot even finish: then the backstop stops it as
    ``starved``, which is not a kill either (the backstop lowered to 60 s here, so that this
    takes a minute, not ten)."""
    monkeypatch.setattr(harness_fork, "BACKSTOP_MIN", 60.0)
    cpu = min(os.sched_getaffinity(0))
    hogs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass",
            ]
        )
        for _ in range(1)
    ]
    try:
        (checkout / "tests" / "test_value.py").write_text(
            textwrap.dedent(
                f"""\
                import os, time


                def test_value():
                    os.sched_setaffinity(0, {{{cpu}}})
                    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
                    t0, w0 = time.process_time(), time.monotonic()
                    while time.monotonic() - w0 < 6:
                        pass
                    open({str(tmp_path / "cpu")!r}, "w").write(str(time.process_time() - t0))
                """
            )
        )
        # 5 s: with autogroup scheduling the run gets half the CPU, 3.1 s of the 6 s loop, and
        # with its start-up that came to 4 s (killed at a 4 s timeout, 7 December).
        outcome = mutation._forked_pytest(server, checkout, ["tests"], 5)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert outcome is not None and outcome[0] in ("survived", "starved"), outcome
    if outcome[0] == "survived":
        cpu_s = float((tmp_path / "cpu").read_text())
        # It was starved: less CPU than its 5 s timeout in 6 s of wall time, so a wall-clock
        # timeout would have killed it. Not a sixth: with the kernel's autogroup scheduling
        # on, the forked test (a session of its own) and the busy loop (this one's) are two
        # groups given equal shares, and the test got 3.1 s of CPU.
        assert cpu_s < 5, cpu_s
