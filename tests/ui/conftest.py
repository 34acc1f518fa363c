"""Fixtures for the index tables and the web view: a real recorded ledger, plus runs whose
names, config and logs are hostile HTML, and a seed group."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from _sealed import build_sealed_project, copy_project
from _ui_lab import add_run
from _ui_shared import HOSTILE, HOSTILE_CONFIG, HOSTILE_LOG, Project

from ledger.audit import audit
from ledger.store import Store
from ledger.ui.server import make_server

CLAIMS = """\
paper: "Doe et al. 2026"
claims:
  - id: seeds-loss
    source: {table: "1", row: "seeds"}
    metric: loss
    higher_is_better: false
    value: 0.50
    spread: 0.05
    spread_type: std
    n_seeds: 3
    split: test
    varied_sources: [seed]
    runs: {names: [seeds]}
"""


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    repo = tmp_path_factory.mktemp("ui") / "proj"
    ids = build_sealed_project(repo)
    store = Store.open(repo / ".ledger")
    add_run(
        store,
        "20261130T060000.000000Z-0000beef",
        {"loss": [(0, 2.0), (1, 1.2), (2, 0.8)], "val/acc": [(0, 0.3), (2, 0.6)]},
        name=HOSTILE,
        tags={"<i>k</i>": "<u>v</u>"},
        config={"lr": 0.1, "note": HOSTILE_CONFIG},
        stdout="\n".join(f"line {i}" for i in range(300)) + "\n" + HOSTILE_LOG + "\n",
    )
    for i, final in enumerate((0.50, 0.55, 0.45)):
        add_run(
            store,
            f"20261130T0601{i:02d}.000000Z-0000000{i}",
            {"loss": [(0, 2.0), (1, 1.0 + i / 10), (2, final)]},
            name="seeds",
            config={"lr": 0.01, "seed": i},
            minute=1 + i,
        )
    claims = repo.parent / "claims.yaml"
    claims.write_text(CLAIMS, encoding="utf-8")
    ids["audit"] = audit(store, claims).id
    ids["hostile"] = "20261130T060000.000000Z-0000beef"
    for i in range(3):
        ids[f"seed{i}"] = f"20261130T0601{i:02d}.000000Z-0000000{i}"
    return repo, ids


@pytest.fixture
def project(recorded: tuple[Path, dict[str, str]], tmp_path: Path) -> tuple[Path, dict[str, str]]:
    return copy_project(recorded[0], tmp_path / "proj"), recorded[1]


@pytest.fixture
def served(project: Project) -> Iterator[tuple[int, Project]]:
    store = Store.open(project[0] / ".ledger")
    server = make_server(store, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], project
    finally:
        server.shutdown()
        server.server_close()
