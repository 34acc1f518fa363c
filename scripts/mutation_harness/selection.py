"""Per-mutant test selection and the result cache of ``scripts/mutation.py``.

The coverage pass runs a module's mapped tests once under coverage, children included, with
one context per test (``mutation_contexts.py``). A mutant then runs only the tests whose
contexts cover the lines of the statement it changes; a mutant on a line that no test covers
survives without running anything. A mutant outside every function body (a constant, a
default, a decorator, a class attribute) runs at import, so it runs all mapped tests, and so
does one on a line covered outside any test (at collection, between tests).

A mutant's result is cached under a key made of the module's source, the mutant, the selected
tests and the contents of their files (with the ``conftest.py`` files above them and
``tests/_support.py``): a later run reuses it while none of these change. Changes elsewhere in
``ledger/`` do not invalidate it (``--no-cache`` reruns everything).
"""

from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import coverage
from coverage import CoverageData
from coverage.exceptions import DataError

ENV = "LEDGER_MUTATION_CONTEXT"
ITEMS_ENV = "LEDGER_MUTATION_ITEMS"
FORKSERVER_ENV = "LEDGER_TEST_FORKSERVER"  # tests/_forkserver.py: "0" starts Python per call


@dataclass
class CoverMap:
    """What the coverage pass saw: line -> contexts, the tests in order, the pass's time."""

    lines: dict[int, list[str]]
    items: list[dict[str, Any]]
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "lines": {str(k): v for k, v in self.lines.items()},
            "items": self.items,
            "seconds": self.seconds,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CoverMap:
        return cls({int(k): v for k, v in d["lines"].items()}, d["items"], d["seconds"])


def coverage_env(work: Path, copy: Path, module: str) -> dict[str, str]:
    """Environment that makes the pytest process and every Python child measure ``module``."""
    rc = work / "coveragerc"
    rc.write_text(
        "[run]\n"
        f"data_file = {work / 'cov'}\n"
        "parallel = true\n"
        f"include = {copy / module}\n"
        # each child's static context is the test (or wide fixture) that started it
        f"context = ${{{ENV}}}\n"
    )
    # scripts/, the folder of mutation_contexts.py (never this package's folder: its module
    # names would take the place of others on the path)
    here = Path(__file__).resolve().parent.parent
    path = f"{copy}:{here}"
    # coverage >= 7.10 installs a .pth that starts it in every process given
    # COVERAGE_PROCESS_START; a sitecustomize on the path does the same for older ones. Only
    # for those: a program `ledger record` runs would list that file among what it read from
    # outside the repository, and warn (test_metric_names.py asserts no warning).
    if coverage.version_info < (7, 10):
        startup = work / "startup"
        startup.mkdir(exist_ok=True)
        (startup / "sitecustomize.py").write_text("import coverage\ncoverage.process_startup()\n")
        path += f":{startup}"
    return {
        "COVERAGE_PROCESS_START": str(rc),
        ITEMS_ENV: str(work / "items.json"),
        ENV: "",
        "PYTHONPATH": path,
        # The tests' run_ledger forks each `python -m ledger` from one server per test process
        # (tests/_forkserver.py), whose coverage starts once, with the context of the test
        # that started it: every later test's calls were counted as that test's. Started
        # calls take each its own test's context. Mutant runs keep the server (only the
        # coverage pass sets this).
        FORKSERVER_ENV: "0",
    }


def read_coverage(work: Path, module: str, seconds: float) -> CoverMap:
    lines: dict[int, set[str]] = {}
    for path in sorted(work.glob("cov.*")):
        data = CoverageData(basename=str(path))
        try:
            data.read()
        except DataError:
            # A child killed (SIGKILL) before coverage finished its file: no data, as
            # `coverage combine` skips it too (the blind spot ALWAYS makes up for).
            continue
        for measured in data.measured_files():
            if measured.endswith("/" + module):
                for lineno, contexts in data.contexts_by_lineno(measured).items():
                    lines.setdefault(lineno, set()).update(contexts)
    items = json.loads((work / "items.json").read_text())
    return CoverMap({k: sorted(v) for k, v in sorted(lines.items())}, items, seconds)


@dataclass
class Spans:
    """Where each line of a module runs: inside a function body, or at import."""

    bodies: list[tuple[int, int]]  # first and last line of each function or lambda body
    statements: list[tuple[int, int]]  # first and last line of each statement
    # each default argument's (start, end) position and its function's first body line
    defaults: list[tuple[tuple[int, int], tuple[int, int], int]]

    @classmethod
    def of(cls, text: str) -> Spans:
        tree = ast.parse(text)
        bodies, statements, defaults = [], [], []
        for node in ast.walk(tree):
            first = 0
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                bodies.append((node.body[0].lineno, node.end_lineno or node.lineno))
                # the first statement that runs: a docstring has no line of code
                body = node.body
                doc = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                first = body[1].lineno if doc and len(body) > 1 else body[0].lineno
            elif isinstance(node, ast.Lambda):
                first = node.body.lineno
                bodies.append((first, node.body.end_lineno or first))
            if first:
                args = node.args  # type: ignore[attr-defined]
                for d in [*args.defaults, *filter(None, args.kw_defaults)]:
                    span = ((d.lineno, d.col_offset), (d.end_lineno, d.end_col_offset))
                    defaults.append((*span, first))
            if isinstance(node, ast.stmt):
                statements.append((node.lineno, node.end_lineno or node.lineno))
        return cls(bodies, statements, defaults)

    def in_body(self, line: int) -> bool:
        return any(a <= line <= b for a, b in self.bodies)

    def first_line(self, start: int, end: int) -> int:
        """First line of the innermost statement holding lines start..end."""
        best = start
        width = None
        for a, b in self.statements:
            if a <= start and end <= b and (width is None or b - a < width):
                best, width = a, b - a
        return best


def select(
    cover: CoverMap, spans: Spans, start: tuple[int, int], end: tuple[int, int]
) -> tuple[list[str] | None, str]:
    """The tests a mutant from ``start`` to ``end`` (line, column) runs: None for all mapped
    tests, [] for none (no test covers it). The second value says why, for the results.

    A default argument matters only to the calls of its function: it selects the tests that
    cover the function's first line of body."""
    lines: range | None = None
    for d_start, d_end, body in spans.defaults:
        if d_start <= start and end <= d_end:
            lines = range(body, body + 1)
            break
    if lines is None:
        if not spans.in_body(start[0]):
            return None, "import-time"
        lines = range(spans.first_line(start[0], end[0]), end[0] + 1)
    contexts: set[str] = set()
    for line in lines:
        contexts.update(cover.lines.get(line, ()))
    if not contexts:
        return [], "uncovered"
    ids = {item["id"] for item in cover.items}
    if any(c not in ids and not c.startswith("fixture:") for c in contexts):
        return None, "covered outside a test"
    chosen = [
        item["id"]
        for item in cover.items
        if item["id"] in contexts or any(f in contexts for f in item["fixtures"])
    ]
    return chosen, "selected"


def seconds_of(cover: CoverMap, tests: list[str] | None) -> float:
    """The tests' time in the coverage pass (an upper bound: coverage slows them)."""
    if tests is None:
        return cover.seconds
    chosen = set(tests)
    return sum(float(item.get("seconds", 0.0)) for item in cover.items if item["id"] in chosen)


# A test's own limit in a forked mutant run (``fork.TestWatch``): five times its time in the
# coverage pass, and at least a minute (a fixture the pass charged to another test, a test
# first to start a server in this run). The run's timeout stays three times all its tests.
TEST_LIMIT_FACTOR = 5.0
TEST_LIMIT_MIN_S = 60.0


def limits_of(cover: CoverMap) -> dict[str, float]:
    """Node id -> the time that test may have in a forked mutant run."""
    return {
        item["id"]: max(TEST_LIMIT_MIN_S, TEST_LIMIT_FACTOR * float(item.get("seconds", 0.0)))
        for item in cover.items
    }


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def hash_tests(repo: Path, tests: list[str]) -> str:
    """Hash of the test files named (node ids or paths), the conftest.py files above them and
    tests/_support.py."""
    files: set[Path] = set()
    for t in tests:
        path = repo / t.split("::")[0]
        files.add(path)
        for parent in path.parents:
            if parent == repo or repo not in parent.parents:
                break
            files.add(parent / "conftest.py")
    files.add(repo / "tests" / "_support.py")
    h = hashlib.sha256()
    for f in sorted(files):
        h.update(str(f.relative_to(repo)).encode() + b"\0")
        h.update(_sha(f.read_bytes()).encode() if f.is_file() else b"-")
    return h.hexdigest()


def hash_tree(repo: Path) -> str:
    """Hash of every file under ``ledger/``: a cached coverage pass (the baseline) is reused
    only on the tree it ran on."""
    h = hashlib.sha256()
    for path in sorted((repo / "ledger").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(repo)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def mutant_key(module_text: str, mutant: dict[str, Any], tests: list[str], digest: str) -> str:
    part = json.dumps(
        [_sha(module_text.encode()), mutant["start"], mutant["end"], mutant["replacement"], tests],
        sort_keys=True,
    )
    return _sha(f"{part}\0{digest}".encode())


def cover_key(module_text: str, tests: list[str], digest: str) -> str:
    return _sha(json.dumps([_sha(module_text.encode()), tests, digest]).encode())
