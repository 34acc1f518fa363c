"""On CI a test whose component ``.ci/run`` installs fails when it is missing (issue #18)."""

from __future__ import annotations

import pytest
from _support import require_component


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
