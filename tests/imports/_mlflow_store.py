"""What the session's MLflow store fixtures (conftest.py) give a test. In a module of its own,
not in conftest.py: ``from conftest import ...`` picks whichever conftest a pytest process
imported first when several test folders are collected in one process."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class MlflowStore:
    uri: str  # what MLflow's client was given
    path: Path  # the mlruns folder or the database file
    ids: dict[str, str]  # run name -> MLflow run id
