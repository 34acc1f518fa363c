"""On CI a test whose component ``.ci/run`` installs fails when it is missing (issue #18)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from _support import REPO, require_component, subprocess_env


@pytest.mark.parametrize("ci", ["true", "1", "TRUE"])
def test_a_missing_component_fails_on_ci(monkeypatch: pytest.MonkeyPatch, ci: str) -> None:
    monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.fail.Exception, match="chromium is missing on CI"):
        require_component(None, "chromium", "apt-get install -y chromium")


@pytest.mark.parametrize("ci", [None, "false", ""])
def test_a_missing_component_skips_elsewhere(
    monkeypatch: pytest.MonkeyPatch, ci: str | None
) -> None:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    with pytest.raises(pytest.skip.Exception, match="chromium is not installed"):
        require_component(None, "chromium", "apt-get install -y chromium")


def test_a_present_component_neither_skips_nor_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    require_component("/usr/bin/chromium", "chromium", "apt-get install -y chromium")


def test_ci_run_sets_ci_and_installs_chromium() -> None:
    from _support import REPO

    script = (REPO / ".ci" / "run").read_text()
    assert 'export CI="${CI:-true}"' in script
    assert "apt-get install -y -qq chromium" in script


def test_a_missing_package_fails_on_ci_and_skips_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    from _support import require_module

    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="no_such_pkg_x is missing on CI"):
        require_module("no_such_pkg_x")
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="no_such_pkg_x is not installed"):
        require_module("no_such_pkg_x")
    assert require_module("json").dumps(1) == "1"


def test_the_browser_tests_fail_on_ci_without_chromium(tmp_path: Path) -> None:
    # The module's own guard, not a copy of it: its tests run with chromium hidden (a plugin
    # clears the module's CHROMIUM once collected) and CI=true.
    (tmp_path / "hide_chromium.py").write_text(
        "def pytest_collection_modifyitems(items):\n"
        "    for item in items:\n"
        "        item.module.CHROMIUM = None\n"
    )
    r = subprocess.run(
        [
            *(
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "-p",
                "hide_chromium",
            ),
            "tests/ui/test_browser.py::test_harness_sees_console_errors",
        ],
        cwd=REPO,
        env=subprocess_env(CI="true", PYTHONPATH=f"{tmp_path}{os.pathsep}{REPO}"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 1 and "chromium is missing on CI" in r.stdout, r.stdout[-2000:]
