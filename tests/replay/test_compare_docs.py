"""Every pycon example in docs/reference/comparators.md runs and prints what the page says."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "comparators.md"
BLOCKS = re.findall(r"```pycon\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


def test_page_has_examples() -> None:
    assert len(BLOCKS) >= 3


def test_examples_run_in_order() -> None:
    """The blocks share one namespace, as on the page."""
    globs: dict[str, object] = {}
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for index, block in enumerate(BLOCKS):
        test = parser.get_doctest(block, globs, f"comparators.md[{index}]", str(PAGE), 0)
        runner.run(test, clear_globs=False)
        globs = test.globs  # DocTest copies its globals: carry them to the next block
        assert runner.failures == 0, f"example {index} of {PAGE.name} failed (see output above)"


@pytest.mark.parametrize("name", ["tensors", "tensorboard", "structured", "table", "logs"])
def test_every_builtin_is_documented(name: str) -> None:
    assert f"| `{name}` |" in PAGE.read_text(encoding="utf-8")
