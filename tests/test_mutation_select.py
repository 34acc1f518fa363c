"""The test selection of ``scripts/mutation.py`` (issue #18): per-test coverage contexts, children
included, and the rules that pick a mutant's tests and key its cached result."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _support import require_module

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
sys.path.insert(0, str(SCRIPTS))

from mutation_harness.selection import (  # noqa: E402
    ENV,
    CoverMap,
    Spans,
    coverage_env,
    hash_tests,
    limits_of,
    mutant_key,
    read_coverage,
    select,
)

require_module("coverage")

MODULE = textwrap.dedent(
    """\
    LIMIT = 3


    def small(x):
        if x < LIMIT:
            return "small"
        return "big"


    def child_only(x):
        return x * 2


    def never(x):
        return x + 1


    def defaulted(x, y=5):
        'A docstring: no line of code.'
        return x + y
    """
)

TESTS = textwrap.dedent(
    """\
    import os
    import subprocess
    import sys

    import pytest

    import mod


    @pytest.fixture(scope="module")
    def doubled():
        return mod.child_only(21)


    def test_in_process():
        assert mod.small(1) == "small"
        assert mod.defaulted(1) == 6


    def test_in_a_child():
        code = "import mod; assert mod.child_only(2) == 4; mod.small(5)"
        subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ))


    def test_uses_the_fixture(doubled):
        assert doubled == 42
    """
)


def test_contexts_name_the_test_in_process_in_children_and_in_wide_fixtures(
    tmp_path: Path,
) -> None:
    copy, work = tmp_path / "copy", tmp_path / "work"
    (copy / "tests").mkdir(parents=True)
    work.mkdir()
    (copy / "mod.py").write_text(MODULE)
    (copy / "tests" / "test_mod.py").write_text(TESTS)
    env = coverage_env(work, copy, "mod.py")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "mutation_contexts",
            "tests/test_mod.py",
        ],
        cwd=copy,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    # A child killed while coverage made its data file leaves the schema without its version
    # row, which coverage cannot read (it happened to a SIGKILLed writer): it is skipped.
    with sqlite3.connect(work / "cov.host.pid1.killed") as con:
        con.execute("CREATE TABLE coverage_schema (version INTEGER)")
    con.close()
    cover = read_coverage(work, "mod.py", 1.0)
    ids = [i["id"] for i in cover.items]
    assert ids == [
        "tests/test_mod.py::test_in_process",
        "tests/test_mod.py::test_in_a_child",
        "tests/test_mod.py::test_uses_the_fixture",
    ]
    spans = Spans.of(MODULE)
    # `if x < LIMIT` (line 5): the in-process test and the child started by the second test
    assert select(cover, spans, (5, 4), (5, 8)) == (ids[:2], "selected")
    # `return "big"` (line 7): only the child reaches it
    assert select(cover, spans, (7, 4), (7, 8)) == ([ids[1]], "selected")
    # child_only's body: the child, and the test whose module-scoped fixture calls it
    assert select(cover, spans, (11, 4), (11, 8)) == ([ids[1], ids[2]], "selected")
    assert select(cover, spans, (15, 4), (15, 8)) == ([], "uncovered")
    # a default argument: the tests that call its function
    assert select(cover, spans, (18, 19), (18, 20)) == ([ids[0]], "selected")
    # LIMIT = 3 runs at import: every mapped test
    assert select(cover, spans, (1, 4), (1, 8)) == (None, "import-time")


def test_a_child_under_coverage_imports_nothing_from_the_harness_work_folder(
    tmp_path: Path,
) -> None:
    """coverage 7.10 and later start themselves in every child through their own .pth: the
    sitecustomize.py the harness wrote for older versions was imported from its work folder by
    every child, and a program `ledger record` ran listed it among the files read from outside
    the repository (a warning test_metric_names.py forbids: engine.py's coverage pass failed)."""
    import coverage

    if coverage.version_info < (7, 10):
        pytest.skip("coverage before 7.10 starts in children only through the sitecustomize")
    copy, work = tmp_path / "copy", tmp_path / "work"
    copy.mkdir()
    work.mkdir()
    (copy / "mod.py").write_text(MODULE)
    env = coverage_env(work, copy, "mod.py")
    code = (
        "import json, sys, mod; mod.small(1); "
        "print(json.dumps([getattr(m, '__file__', '') or '' for m in list(sys.modules.values())]))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=copy,
        env={**os.environ, **env, ENV: "tests/test_x.py::test_child"},
        capture_output=True,
        text=True,
        check=True,
    )
    files = json.loads(run.stdout)
    assert not [f for f in files if f.startswith(str(work))], files
    # and the child was measured all the same, under the test that started it
    (work / "items.json").write_text("[]")  # what the pytest plugin writes; no pytest here
    cover = read_coverage(work, "mod.py", 1.0)
    assert cover.lines, "the child was not measured"
    assert {c for cs in cover.lines.values() for c in cs} == {"tests/test_x.py::test_child"}


def test_a_line_covered_outside_any_test_selects_all() -> None:
    spans = Spans.of(MODULE)
    cover = CoverMap({11: ["", "t::a"]}, [{"id": "t::a", "fixtures": []}], 1.0)
    assert select(cover, spans, (11, 4), (11, 8)) == (None, "covered outside a test")


def test_a_mutant_in_a_condition_uses_its_statement_first_line() -> None:
    text = "def f(a, b):\n    if (a and\n            b):\n        return 1\n"
    cover = CoverMap({2: ["t::a"]}, [{"id": "t::a", "fixtures": []}], 1.0)
    assert select(cover, Spans.of(text), (3, 12), (3, 13)) == (["t::a"], "selected")


def test_the_cache_key_changes_with_the_source_the_mutant_and_the_tests(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    test_file = tmp_path / "tests" / "test_x.py"
    test_file.write_text("def test_a(): pass\n")
    mutant = {"start": [1, 0], "end": [1, 1], "replacement": "(2)"}
    ids = ["tests/test_x.py::test_a"]
    key = mutant_key("x = 1\n", mutant, ids, hash_tests(tmp_path, ids))
    assert key == mutant_key("x = 1\n", mutant, ids, hash_tests(tmp_path, ids))
    assert key != mutant_key("x = 1 \n", mutant, ids, hash_tests(tmp_path, ids))
    other = {**mutant, "replacement": "(3)"}
    assert key != mutant_key("x = 1\n", other, ids, hash_tests(tmp_path, ids))
    assert key != mutant_key("x = 1\n", mutant, [*ids, "t::b"], hash_tests(tmp_path, ids))
    test_file.write_text("def test_a(): assert True\n")
    assert key != mutant_key("x = 1\n", mutant, ids, hash_tests(tmp_path, ids))
    test_file.write_text("def test_a(): pass\n")
    (tmp_path / "tests" / "conftest.py").write_text("")
    assert key != mutant_key("x = 1\n", mutant, ids, hash_tests(tmp_path, ids))


def test_a_node_id_longer_than_the_kernel_takes_as_an_argument_still_runs(
    tmp_path: Path,
) -> None:
    """redact.py's tests have parameters of 200 KB (long log lines) in their ids; one such id
    as a command-line argument made the run fail with E2BIG (`Argument list too long`). The
    id is the one pytest collects (how a pytest version names a parameter is its own)."""
    import mutation

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_long.py").write_text(
        "import pytest\n\n\n"
        '@pytest.mark.parametrize("line", [pytest.param("a" * 200_000, id="a" * 200_000)])\n'
        "def test_long(line):\n"
        "    assert len(line) == 200_000\n"
    )
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "tests/test_long.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    [node] = [line for line in collected.stdout.splitlines() if "::test_long[" in line]
    outcome, _ = mutation._pytest(tmp_path, [node], timeout=120)
    assert outcome == "survived"
    outcome, _ = mutation._pytest(tmp_path, [node.replace("::test_long", "::test_other")], 120)
    assert outcome == "killed"  # the id is matched, not ignored


def test_a_plugin_is_loaded_however_many_node_ids_the_run_is_given(tmp_path: Path) -> None:
    """More than 20 node ids go to pytest in a file (@file), and pytest ignores a `-p PLUGIN`
    written in that file without a word: replay/engine.py's 33 mapped tests ran their
    coverage pass without mutation_contexts (no items.json: the harness stopped, five times).
    The plugin given as an option loads with 3 node ids and with 30."""
    import mutation

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_many.py").write_text(
        "".join(f"def test_{i}():\n    pass\n\n\n" for i in range(30))
    )
    (tmp_path / "seen_plugin.py").write_text(
        "import os\n\n\n"
        "def pytest_sessionfinish(session):\n"
        "    with open(os.path.join(str(session.config.rootpath), 'seen'), 'a') as f:\n"
        "        f.write(f'{session.testscollected}\\n')\n"
    )
    for n in (3, 30):
        ids = [f"tests/test_many.py::test_{i}" for i in range(n)]
        outcome, _ = mutation._pytest(tmp_path, ids, 120, options=["-p", "seen_plugin"])
        assert outcome == "survived"
    assert (tmp_path / "seen").read_text().split() == ["3", "30"]


def test_each_test_s_ledger_calls_are_counted_as_that_test_s(tmp_path: Path) -> None:
    """run_ledger forks `python -m ledger` from a server that each test process starts once
    (tests/_forkserver.py); its coverage started with the context of the first test that
    called it, so every later test's calls were counted as that one's, and a mutant that only
    the later tests reach selected the wrong test. The coverage pass starts each call."""
    repo = SCRIPTS.parent
    work, tests = tmp_path / "work", tmp_path / "tests"
    work.mkdir()
    tests.mkdir()
    (tests / "test_calls.py").write_text(
        "import sys\n\n"
        f"sys.path.insert(0, {str(repo / 'tests')!r})\n"
        "from _support import run_ledger  # noqa: E402\n\n\n"
        "def test_first():\n"
        "    assert run_ledger('--version').returncode == 0\n\n\n"
        "def test_second():\n"
        "    assert run_ledger('--version').returncode == 0\n"
    )
    module = "ledger/cli/entry.py"  # main() runs in each call, after the server's imports
    env = coverage_env(work, repo, module)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-p", "mutation_contexts", "tests/test_calls.py"],
        cwd=tmp_path,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    cover = read_coverage(work, module, 1.0)
    text = (repo / module).read_text().splitlines()
    [line] = [n for n, t in enumerate(text, 1) if "query = parse_query_argv(" in t]
    assert cover.lines[line] == [
        "tests/test_calls.py::test_first",
        "tests/test_calls.py::test_second",
    ]


def test_the_list_of_tests_is_written_where_the_pass_began_whatever_a_test_does_to_the_env(
    tmp_path: Path,
) -> None:
    """The list's path is read as the plugin loads: a test that deletes the variable neither
    loses the list nor goes unnamed (round 14 suspected one, for replay/engine.py's missing
    items.json; none was named there)."""
    copy, work = tmp_path / "copy", tmp_path / "work"
    (copy / "tests").mkdir(parents=True)
    work.mkdir()
    (copy / "mod.py").write_text(MODULE)
    (copy / "tests" / "test_env.py").write_text(
        "import os\n\n\ndef test_a():\n    pass\n\n\n"
        "def test_drops_it():\n    del os.environ['LEDGER_MUTATION_ITEMS']\n\n\n"
        "def test_c():\n    pass\n"
    )
    env = coverage_env(work, copy, "mod.py")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-p", "mutation_contexts", "tests/test_env.py"],
        cwd=copy, env={**os.environ, **env}, capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    cover = read_coverage(work, "mod.py", 1.0)
    assert [i["id"] for i in cover.items] == [
        "tests/test_env.py::test_a",
        "tests/test_env.py::test_drops_it",
        "tests/test_env.py::test_c",
    ]
    told = "mutation_contexts: LEDGER_MUTATION_ITEMS changed by tests/test_env.py::test_drops_it"
    assert told in run.stdout, run.stdout


def test_each_test_may_have_five_times_its_coverage_pass_time_and_at_least_a_minute() -> None:
    cover = CoverMap(
        lines={},
        items=[
            {"id": "tests/test_a.py::test_slow", "fixtures": [], "seconds": 30.0},
            {"id": "tests/test_a.py::test_quick", "fixtures": [], "seconds": 0.2},
            {"id": "tests/test_a.py::test_untimed", "fixtures": []},
        ],
        seconds=31.0,
    )
    assert limits_of(cover) == {
        "tests/test_a.py::test_slow": 150.0,
        "tests/test_a.py::test_quick": 60.0,
        "tests/test_a.py::test_untimed": 60.0,
    }


def test_a_watched_test_is_over_its_limit_counted_from_when_it_was_seen_starting(
    tmp_path: Path,
) -> None:
    """``fork.TestWatch``: the run's time (``had``) a test has had since the progress file
    first named it; a test the limits do not name is never over; no file yet, nothing."""
    from mutation_harness.fork import TestWatch

    progress = tmp_path / "copy.progress"
    watch = TestWatch(progress, {"t::a": 10.0, "t::b": 5.0})
    assert not watch.over(100.0)  # nothing started
    progress.write_text("t::a\n")
    assert not watch.over(20.0)  # a seen starting at 20
    assert not watch.over(29.9)
    assert watch.over(30.0)
    with open(progress, "a") as fh:
        fh.write("t::b\nt::c\n")
    assert not watch.over(31.0)  # c: no limit
    assert not watch.over(1000.0)
    with open(progress, "a") as fh:
        fh.write("t::")  # a line still being written is not read yet
    assert not watch.over(1001.0)
    with open(progress, "a") as fh:
        fh.write("b\n")
    assert not watch.over(1001.0)
    assert watch.over(1006.0)
