"""Every pycon example in docs/explanation/statistics.md runs and prints what the page says."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "explanation" / "statistics.md"
BLOCKS = re.findall(r"```pycon\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


def test_page_has_examples() -> None:
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example_runs(index: int) -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(BLOCKS[index], {}, f"statistics.md[{index}]", str(PAGE), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.failures == 0, f"example {index} of {PAGE.name} failed (see output above)"
