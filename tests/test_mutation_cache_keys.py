"""The harness keys a mutant's cached result by the tests it ran: the copy's, not the
checkout's as edited while the run went on (scripts/mutation_harness/run.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

import mutation
from mutation_harness import mutate, run

TEST = "def test_value():\n    from pkgx.mod import value\n\n    assert value() == 1\n"


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = tmp_path / "repo"
    (repo / "pkgx").mkdir(parents=True)
    (repo / "pkgx" / "__init__.py").write_text("")
    (repo / "pkgx" / "mod.py").write_text("def value():\n    return 1\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_value.py").write_text(TEST)
    # Not reaching value(): the mutant in its body selects test_value.py alone, a subset
    # whose digest is taken after the coverage pass (the whole set's is taken at the start).
    (repo / "tests" / "test_other.py").write_text("def test_other():\n    assert True\n")
    monkeypatch.setattr(run, "REPO", repo)
    monkeypatch.setattr(mutate, "REPO", repo)
    return repo


def _opts() -> Any:
    return mutation.Options(tests=["tests/test_value.py", "tests/test_other.py"], fork=False)


def test_a_test_edited_while_the_run_goes_on_does_not_key_what_ran_before_it(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The test file is edited during the coverage pass (after the copy was made): the
    results are cached under the tests that ran, so the next run, on the edited file, runs
    the mutant again instead of reusing a result its tests never produced."""
    cover = run._cover

    def edit_meanwhile(copy: Any, *a: Any, **kw: Any) -> Any:
        assert copy.path.is_dir()  # the copy is made (on first use): the edit comes after
        (checkout / "tests" / "test_value.py").write_text(TEST + "\n\ndef test_more():\n    pass\n")
        return cover(copy, *a, **kw)

    monkeypatch.setattr(run, "_cover", edit_meanwhile)
    out = tmp_path / "results"
    first = mutation.run_module("pkgx/mod.py", out_dir=out, opts=_opts())
    assert {r["outcome"] for r in first["results"]} == {"killed"}
    assert all(r["why"] != "import-time" for r in first["results"])  # a subset each
    monkeypatch.setattr(run, "_cover", cover)
    second = mutation.run_module("pkgx/mod.py", out_dir=out, opts=_opts())
    assert {r.get("cached", False) for r in second["results"]} == {False}
    assert {r["outcome"] for r in second["results"]} == {"killed"}
    third = mutation.run_module("pkgx/mod.py", out_dir=out, opts=_opts())
    assert {r.get("cached", False) for r in third["results"]} == {True}  # nothing changed


def test_a_test_edited_before_the_copy_is_made_stops_the_run(
    checkout: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_checkout = run._copy_checkout

    def edit_first(dest: Path) -> None:
        (checkout / "tests" / "test_value.py").write_text(TEST + "# edited\n")
        copy_checkout(dest)

    monkeypatch.setattr(run, "_copy_checkout", edit_first)
    with pytest.raises(SystemExit, match=r"tests mapped for pkgx/mod\.py changed between"):
        mutation.run_module("pkgx/mod.py", out_dir=tmp_path / "results", opts=_opts())


def test_lines_runs_only_the_mutants_on_them_and_a_later_run_resumes_the_rest(
    checkout: Path, tmp_path: Path
) -> None:
    """``--lines``: the mutants outside the range are reported as not run and nothing is
    cached for them; a run without it runs them and reuses what the first one ran."""
    (checkout / "pkgx" / "mod.py").write_text(
        "def value():\n    return 1\n\n\ndef other(x):\n    return x + 2\n"
    )
    (checkout / "tests" / "test_other.py").write_text(
        "def test_other():\n    from pkgx.mod import other\n\n    assert other(1) == 3\n"
    )
    out = tmp_path / "results"
    opts = _opts()
    opts.lines = (5, 6)
    first = mutation.run_module("pkgx/mod.py", out_dir=out, opts=opts)
    by_line = {(r["line"], r["mutation"]): r for r in first["results"]}
    assert {k[0] for k in by_line} == {2, 6}
    assert {r["outcome"] for (line, _), r in by_line.items() if line == 2} == {"not-run"}
    ran = {k for k, r in by_line.items() if k[0] == 6}
    assert ran and {by_line[k]["outcome"] for k in ran} == {"killed"}
    second = mutation.run_module("pkgx/mod.py", out_dir=out, opts=_opts())
    again = {(r["line"], r["mutation"]): r for r in second["results"]}
    assert {k for k, r in again.items() if r.get("cached")} == ran
    assert {r["outcome"] for r in again.values()} == {"killed"}


def test_lines_are_parsed_and_bad_ranges_refused() -> None:
    assert mutation.parse_lines("584-739") == (584, 739)
    assert mutation.parse_lines("600") == (600, 600)
    lo, hi = mutation.parse_lines("584-")
    assert lo == 584 and hi > 10**6
    for bad in ("x", "9-3", "0-4", "-4", "4-y"):
        with pytest.raises(mutation.argparse.ArgumentTypeError, match="not a line range"):
            mutation.parse_lines(bad)


def test_a_run_with_lines_says_the_rest_is_outside_them_not_that_the_budget_ran_out(
    checkout: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (checkout / "pkgx" / "mod.py").write_text(
        "def value():\n    return 1\n\n\ndef other(x):\n    return x + 2\n"
    )
    monkeypatch.setattr(mutation, "REPO", checkout)
    monkeypatch.setitem(mutation.MODULES, "pkgx/mod.py", ["tests/test_value.py"])
    monkeypatch.setattr(sys, "argv", ["mutation.py", "--no-fork", "--lines", "5-", "pkgx/mod.py"])
    mutation.main()
    out = capsys.readouterr().out
    assert "not run (outside --lines 5-)" in out and "budget" not in out
