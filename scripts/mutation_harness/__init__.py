"""The mutation harness behind ``scripts/mutation.py`` (``make mutation``), one job per module:

- ``targets``: what is mutated and against which tests (``MODULES``, ``ALWAYS``), and the
  survivors judged equivalent (``EQUIVALENT``), each with its reason;
- ``mutate``: the operators, the mutants of a module, a mutant applied to its source;
- ``selection``: per-test coverage contexts, and the tests that cover a mutant's span;
- ``fork``: a warm pytest server that forks one child per mutant;
- ``run``: the throw-away checkout, the runs of the tests, one module's mutants end to end;
- ``cache``: the results kept between runs (a rerun redoes only what changed);
- ``report``: the results per module, and the Markdown table of docs/mutation.md.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
