"""The package keeps its layers and has no import cycles (import-linter contracts in
pyproject.toml, drawn in docs/explanation/design.md)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _support import REPO, require_component

try:
    import importlinter
except ImportError:  # pragma: no cover - the dev extra installs it (and grimp with it)
    importlinter = None

LINT = (
    "import sys; from importlinter.cli import lint_imports; "
    "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True))"
)


@pytest.fixture(autouse=True)
def _linter() -> None:
    require_component(importlinter, "import-linter", "pip install -e '.[dev]'")


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the ``ledger`` package under ``root``, with this checkout's contracts."""
    return subprocess.run(
        [sys.executable, "-c", LINT, str(REPO / "pyproject.toml")],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_contracts_are_kept() -> None:
    r = lint(REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout


def graph_facts(root: Path) -> dict[str, list[Any]]:
    """Module-level cycles and importers of ``ledger`` itself, for the package under ``root``."""
    r = subprocess.run(
        [sys.executable, str(REPO / "tests" / "_import_cycles.py"), "ledger"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    facts: dict[str, list[Any]] = json.loads(r.stdout)
    return facts


def test_no_module_imports_another_that_imports_it_back() -> None:
    # TYPE_CHECKING imports and imports inside functions included.
    assert graph_facts(REPO)["cycles"] == []


def test_nothing_inside_the_package_imports_its_root() -> None:
    # ``ledger/__init__.py`` imports the run layer: a module that imports ``ledger`` (``from ..
    # import __version__``) climbs to the top; ``ledger._version`` is there for that.
    assert graph_facts(REPO)["root_importers"] == []


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    shutil.copytree(REPO / "ledger", tmp_path / "ledger", ignore=shutil.ignore_patterns("*.pyc"))
    return tmp_path


def test_a_lower_layer_importing_a_higher_one_breaks_the_contract(copy: Path) -> None:
    with (copy / "ledger" / "store" / "gc.py").open("a") as f:
        f.write("\nfrom ..run.find import resolve_run  # noqa: E402\n")
    r = lint(copy)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "ledger.store.gc -> ledger.run.find" in r.stdout


def test_a_cycle_inside_a_package_breaks_the_contract_and_is_found(copy: Path) -> None:
    # ``capture.secrets`` imports ``capture.redact``; a lazy import back closes a cycle.
    with (copy / "ledger" / "capture" / "redact.py").open("a") as f:
        f.write("\n\ndef _later() -> None:\n    from .secrets import Scrubber  # noqa: F401\n")
    r = lint(copy)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "BROKEN" in r.stdout
    assert ["ledger.capture.redact", "ledger.capture.secrets"] in graph_facts(copy)["cycles"]


def test_the_design_page_draws_the_layers_the_contract_enforces() -> None:
    import tomllib

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [
        c for c in config["tool"]["importlinter"]["contracts"] if c.get("containers") == ["ledger"]
    ]
    page = (REPO / "docs" / "explanation" / "design.md").read_text(encoding="utf-8")
    diagram = page.split("```text\n", 1)[1].split("```", 1)[0]
    drawn = [line[3:].split("  ")[0].strip() for line in diagram.splitlines()[1:]]
    assert [d for d in drawn if d] == contract["layers"]
