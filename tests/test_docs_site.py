"""The docs site as a reader gets it: ``mkdocs build --strict`` with Material for MkDocs, its
search index, and an API reference generated from the docstrings that covers every public name
of ``ledger``, ``ledger.torch``, ``ledger.check``, ``ledger.stats`` and the integrations.

One real build (a few seconds) shared by the tests of this file.
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from _support import REPO, require_module, subprocess_env
from test_docs_console import DOCS

# Page of the API reference -> the modules it documents.
API_PAGES = {
    "reference/api/ledger": ["ledger", "ledger.errors"],
    "reference/api/torch": ["ledger.torch"],
    "reference/api/check": ["ledger.check"],
    "reference/api/stats": ["ledger.stats"],
    "reference/api/integrations": ["ledger.integrations.lightning", "ledger.integrations.hf"],
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_module("material", "pip install -e '.[docs]'")
    require_module("mkdocstrings_handlers.python", "pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    r = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=REPO,
        env=subprocess_env(NO_MKDOCS_2_WARNING="1"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-4000:]
    return out


def _nav_pages(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [p for item in nav for p in _nav_pages(item)]
    if isinstance(nav, dict):
        return [p for v in nav.values() for p in _nav_pages(v)]
    return []


def _config() -> dict[str, object]:
    class _Loader(yaml.SafeLoader):
        pass

    # mkdocs.yml may hold !!python/name tags (Material's emoji options); none are needed here.
    _Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda *_: None)
    value = yaml.load((REPO / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_Loader)
    assert isinstance(value, dict)
    return value


def test_material_theme_with_search(site: Path) -> None:
    config = _config()
    assert config["theme"]["name"] == "material"  # type: ignore[index]
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    locations = {d["location"] for d in index["docs"]}
    # The search finds API objects by name, not only prose pages.
    api = "reference/api/stats/#ledger.stats.compare_seeds"
    assert any(loc.startswith(api) for loc in locations)
    assert any(loc.startswith("how-to/view-runs/") for loc in locations)


@pytest.mark.parametrize("page", sorted(API_PAGES))
def test_api_reference_covers_every_public_name(site: Path, page: str) -> None:
    html = (site / page / "index.html").read_text(encoding="utf-8")
    anchors = set(re.findall(r'id="(ledger[\w.]*)"', html))
    missing = []
    for module in API_PAGES[page]:
        names = [n for n in importlib.import_module(module).__all__ if not n.startswith("_")]
        for n in names:
            obj = getattr(importlib.import_module(module), n)
            # A function named like its module (ledger.torch.watch) is documented where it is
            # defined: the package's name is the submodule's.
            where = f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '')}"
            if f"{module}.{n}" not in anchors and where not in anchors:
                missing.append(f"{module}.{n}")
    # ``ledger``'s errors are documented once, under ledger.errors.
    if page == "reference/api/ledger":
        errors = set(importlib.import_module("ledger.errors").__all__)
        missing = [m for m in missing if m.removeprefix("ledger.") not in errors]
    assert not missing, f"{page} lacks {missing}"
    # Generated from docstrings: the page quotes one.
    module = importlib.import_module(API_PAGES[page][0])
    words = re.findall(r"[a-z]{4,}", (module.__doc__ or "").split("\n")[0])
    shown = re.findall(r"[a-z]{4,}", re.sub(r"<[^>]+>", "", html))
    assert len(words) >= 3 and " ".join(words[:3]) in " ".join(shown), words


def test_docs_test_runs_every_published_guide() -> None:
    """Every tutorial and how-to page in the site's navigation is a page whose console blocks
    tests/test_docs_console.py runs, and every page that test runs is published."""
    nav = _nav_pages(_config()["nav"])
    guides = [p for p in nav if p.startswith(("tutorial/", "how-to/"))]
    run = {d.removeprefix("docs/") for d in DOCS if d.startswith("docs/")}
    assert guides and set(guides) == run
    for page in nav:
        assert (REPO / "docs" / page).is_file(), page
