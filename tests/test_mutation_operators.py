"""Operators of ``scripts/mutation.py`` taken from cosmic-ray after measuring both tools on
``ledger/replay/compare/tensors.py`` (docs/mutation.md, "A maintained tool, measured"): a
difference counted one way only, ``continue`` <-> ``break``, and 0 -> -1; and mutmut's
``+=`` -> ``=``. Each mutant is applied to real source and run, to show the change it makes."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
sys.path.insert(0, str(SCRIPTS))

from mutation_harness.mutate import apply, mutants_of  # noqa: E402

SOURCE = textwrap.dedent(
    """\
    def differs(a, b):
        return a != b


    def same(a, b):
        return a == b


    def kept(items):
        out = []
        for x in items:
            if x is None:
                continue
            out.append(x)
        return out


    def first_of(items):
        return items[0]


    def total(items):
        n = 0
        for x in items:
            n += x
        return n


    def until_none(items):
        out = []
        for x in items:
            if x is None:
                break
            out.append(x)
        return out
    """
)


def _module(tmp_path: Path) -> tuple[str, dict[str, str]]:
    """The mutants by their description; where two share one (a 0 in two functions), the
    first in the source."""
    path = tmp_path / "mod.py"
    path.write_text(SOURCE)
    out: dict[str, str] = {}
    for m in mutants_of(str(path)):
        out.setdefault(m.mutation, apply(SOURCE, m))
    return str(path), out


def _load(text: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(compile(text, "mod.py", "exec"), namespace)
    return namespace


def test_a_difference_is_also_mutated_to_count_one_way_only(tmp_path: Path) -> None:
    _, mutants = _module(tmp_path)
    assert {k for k in mutants if k.startswith("a != b")} == {
        "a != b -> a == b",
        "a != b -> a < b",
        "a != b -> a > b",
    }
    less = _load(mutants["a != b -> a < b"])["differs"]
    assert less(1, 2) and not less(2, 1)  # a test with only a < b cannot tell it from !=
    more = _load(mutants["a != b -> a > b"])["differs"]
    assert more(2, 1) and not more(1, 2)
    # equality keeps its one flip: no ordering mutants of ==
    assert {k for k in mutants if k.startswith("a == b")} == {"a == b -> a != b"}


def test_continue_and_break_are_swapped(tmp_path: Path) -> None:
    _, mutants = _module(tmp_path)
    assert "continue -> break" in mutants
    assert "break -> continue" in mutants
    items = [1, None, 2]
    assert _load(SOURCE)["kept"](items) == [1, 2]
    assert _load(mutants["continue -> break"])["kept"](items) == [1]
    assert _load(SOURCE)["until_none"](items) == [1]
    assert _load(mutants["break -> continue"])["until_none"](items) == [1, 2]


def test_a_zero_also_becomes_minus_one_the_first_taken_from_the_end(tmp_path: Path) -> None:
    _, mutants = _module(tmp_path)
    assert {k for k in mutants if k.startswith("0 ")} == {"0 -> 1", "0 -> -1"}
    items = ["first", "middle", "last"]
    assert _load(SOURCE)["first_of"](items) == "first"
    assert _load(mutants["0 -> -1"])["first_of"](items) == "last"
    assert _load(mutants["0 -> -1"])["first_of"](["only"]) == "only"  # one element: no change


def test_a_running_total_keeps_only_the_last_term(tmp_path: Path) -> None:
    _, mutants = _module(tmp_path)
    assert "n += x -> =" in mutants
    assert _load(SOURCE)["total"]([1, 2, 3]) == 6
    assert _load(mutants["n += x -> ="])["total"]([1, 2, 3]) == 3
