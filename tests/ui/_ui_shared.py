"""Names the UI tests share with their fixtures (conftest.py). In a module of its own, not in
conftest.py: ``from conftest import ...`` picks whichever conftest a pytest process imported
first when several test folders are collected in one process."""

from __future__ import annotations

from pathlib import Path

HOSTILE = "<script>alert('name')</script>"
HOSTILE_CONFIG = '"><img src=x onerror=alert(2)>'
HOSTILE_LOG = "<b>step</b> </pre><script>alert(3)</script>"

# (project folder, names of its runs -> ids): what the ``project`` fixture gives.
Project = tuple[Path, dict[str, str]]
