"""Where the test suite's CPU goes: a pytest plugin, and a report over what it wrote.

Recording (one line of JSON per test, per process, appended to files in a folder)::

    LEDGER_SUITE_PROFILE=/tmp/prof PYTHONPATH=$PWD:$PWD/scripts/suite_profile_site \\
        python -m pytest -p scripts.suite_profile -n 2 ...

For each test (set-up, call and tear-down together): wall seconds, the CPU (user + sys) of the
pytest process itself, and the CPU of its children that ended and were waited for during the
test (``RUSAGE_CHILDREN``: a child's waited-for descendants are in it too; a child left running
or never waited for is not). With ``scripts/suite_profile_site`` on ``PYTHONPATH`` (its
``sitecustomize`` is then imported by every Python the tests start, since children inherit the
variable) each Python child that exits normally also writes its pid, parent, command line, CPU
and whether it imported torch, keyed by ``PYTEST_CURRENT_TEST``, which children inherit.

Report::

    python scripts/suite_profile.py /tmp/prof [--top 40]

prints the CPU by test, by file, by folder and by kind of child. Module- and session-scoped
fixtures are charged to the first test that needs them, as pytest runs them there.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from typing import Any

_ENV = "LEDGER_SUITE_PROFILE"


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _out() -> str | None:
    folder = os.environ.get(_ENV)
    if not folder:
        return None
    os.makedirs(folder, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    return os.path.join(folder, f"tests-{worker}-{os.getpid()}.jsonl")


try:
    import pytest
except ImportError:  # the report below runs without pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(item: Any, nextitem: Any) -> Iterator[None]:
        path = _out()
        if path is None:
            return (yield)
        wall, own, kids = (
            time.monotonic(),
            _cpu(resource.RUSAGE_SELF),
            _cpu(resource.RUSAGE_CHILDREN),
        )
        try:
            return (yield)
        finally:
            line = {
                "test": item.nodeid,
                "wall": round(time.monotonic() - wall, 4),
                "own": round(_cpu(resource.RUSAGE_SELF) - own, 4),
                "children": round(_cpu(resource.RUSAGE_CHILDREN) - kids, 4),
            }
            with open(path, "a") as f:
                f.write(json.dumps(line) + "\n")

    @pytest.hookimpl(wrapper=True)
    def pytest_collection(session: Any) -> Iterator[None]:
        path = _out()
        if path is None:
            return (yield)
        wall, own = time.monotonic(), _cpu(resource.RUSAGE_SELF)
        try:
            return (yield)
        finally:
            line = {
                "test": "<collection>",
                "wall": round(time.monotonic() - wall, 4),
                "own": round(_cpu(resource.RUSAGE_SELF) - own, 4),
                "children": 0.0,
            }
            with open(path, "a") as f:
                f.write(json.dumps(line) + "\n")


def _kind(argv: list[str], torch: bool) -> str:
    """A short name for what a child was: `python -m ledger <command>`, torchrun, a script."""
    args = argv[1:] if argv and argv[0] in ("-m", "-c") else argv
    if argv[:1] == ["-c"]:
        kind = "python -c"
    elif argv[:1] == ["-m"] and args:
        kind = f"-m {args[0]}"
        if args[0] == "ledger":
            words = [a for a in args[1:] if not a.startswith("-")]
            kind += f" {words[0]}" if words else ""
    elif args:
        name = os.path.basename(args[0])
        kind = "torchrun" if "torchrun" in name else name
    else:
        kind = "python"
    return kind + (" [torch]" if torch else "")


def report(folder: str, top: int) -> None:
    from collections import defaultdict

    tests: list[dict[str, Any]] = []
    children: list[dict[str, Any]] = []
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name)) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        (tests if name.startswith("tests-") else children).extend(rows)

    def cpu(t: dict[str, Any]) -> float:
        return float(t["own"]) + float(t["children"])

    total_own = sum(t["own"] for t in tests)
    total_kids = sum(t["children"] for t in tests)
    print(f"{len(tests)} rows: own {total_own:.0f} s, children {total_kids:.0f} s")

    def table(title: str, key: Any) -> None:
        groups: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
        for t in tests:
            g = groups[key(t)]
            g[0] += t["own"]
            g[1] += t["children"]
            g[2] += t["wall"]
            g[3] += 1
        print(f"\n== {title}: cpu s (own + children), wall s, tests")
        for k, (own, kids, wall, n) in sorted(
            groups.items(), key=lambda kv: -(kv[1][0] + kv[1][1])
        )[:top]:
            print(f"{own + kids:8.1f} {own:7.1f} {kids:7.1f} {wall:8.1f} {int(n):5d}  {k}")

    table("by folder", lambda t: os.path.dirname(t["test"].split("::")[0]) or ".")
    table("by file", lambda t: t["test"].split("::")[0])
    table("by test", lambda t: t["test"])

    if children:
        kinds: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
        by_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
        for c in children:
            k = kinds[_kind(c["argv"], c["torch"])]
            k[0] += c["cpu"]
            k[1] += 1
            test = (c.get("test") or "<none>").split("::")[0]
            f = by_file[f"{test}  {_kind(c['argv'], c['torch'])}"]
            f[0] += c["cpu"]
            f[1] += 1
        print(f"\n== Python children ({len(children)}): cpu s, count, by kind")
        for k, (s, n) in sorted(kinds.items(), key=lambda kv: -kv[1][0])[:top]:
            print(f"{s:8.1f} {int(n):5d}  {k}")
        print("\n== Python children by file and kind: cpu s, count")
        for k, (s, n) in sorted(by_file.items(), key=lambda kv: -kv[1][0])[:top]:
            print(f"{s:8.1f} {int(n):5d}  {k}")


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--top", type=int, default=40)
    ns = parser.parse_args()
    report(ns.folder, ns.top)
