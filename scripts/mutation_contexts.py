"""pytest plugin for the coverage pass of ``scripts/mutation.py``: one coverage context per test.

Loaded with ``-p mutation_contexts`` in a process that coverage already measures (started by
coverage's own ``.pth`` from ``COVERAGE_PROCESS_START``). Around each test it switches coverage's
dynamic context to the test's node id and sets ``LEDGER_MUTATION_CONTEXT`` to it, which the
coverage configuration uses as the static context of every child process (``python -m ledger``
started by the test inherits the variable, and coverage's ``.pth`` starts in it too). A fixture
wider than a function runs once for several tests, so its setup gets a context of its own,
``fixture:<scope>:<baseid>:<name>``, and each test lists the wide fixtures it uses: a line that
only such a setup covers selects every test that uses the fixture. The list of tests, in
collection order, with their wide fixtures and durations, goes to ``LEDGER_MUTATION_ITEMS``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Generator
from pathlib import Path
from typing import Any

import coverage
import pytest

ENV = "LEDGER_MUTATION_CONTEXT"
ITEMS = "LEDGER_MUTATION_ITEMS"
# Read as the plugin loads, not at the session's end, so that what the tests do to os.environ
# cannot move the list; a test that changes the variable is named (below). Round 14's missing
# items.json for replay/engine.py was not that: this plugin was never loaded, its `-p` having
# gone into the @file of node ids, which pytest reads after loading plugins (run._pytest_args).
_OUT = os.environ.get(ITEMS)
_WIDE = {"class", "module", "package", "session"}
_items: list[dict[str, Any]] = []
_durations: dict[str, float] = {}


def _switch(context: str) -> None:
    os.environ[ENV] = context
    cov = coverage.Coverage.current()
    if cov is not None:
        cov.switch_context(context)


def fixture_context(fixturedef: Any) -> str:
    return f"fixture:{fixturedef.scope}:{fixturedef.baseid}:{fixturedef.argname}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    _switch(item.nodeid)
    try:
        return (yield)
    finally:
        _switch("")


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: Any, request: Any) -> Generator[None]:
    if fixturedef.scope not in _WIDE:
        return (yield)
    before = os.environ.get(ENV, "")
    _switch(fixture_context(fixturedef))
    try:
        return (yield)
    finally:
        _switch(before)


def pytest_collection_finish(session: pytest.Session) -> None:
    for item in session.items:
        wide: list[str] = []
        info = getattr(item, "_fixtureinfo", None)
        if info is not None:
            for name in info.names_closure:
                defs = info.name2fixturedefs.get(name)
                if defs and defs[-1].scope in _WIDE:
                    wide.append(fixture_context(defs[-1]))
        _items.append({"id": item.nodeid, "fixtures": wide})


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _durations[report.nodeid] = _durations.get(report.nodeid, 0.0) + report.duration
    if report.when == "teardown" and os.environ.get(ITEMS) != _OUT and not _changed:
        _changed.append(report.nodeid)  # the first test after which it differs, once


_changed: list[str] = []


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for nodeid in _changed:
        terminalreporter.write_line(f"mutation_contexts: {ITEMS} changed by {nodeid}")


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = _OUT
    if out:
        for item in _items:
            item["seconds"] = round(_durations.get(item["id"], 0.0), 3)
        Path(out).write_text(json.dumps(_items))
