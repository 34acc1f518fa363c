"""Run ids and the ref that names a run's record: the bottom of the run layer."""

from __future__ import annotations

import os
from datetime import UTC, datetime

__all__ = ["new_run_id", "run_ref"]


def new_run_id(now: datetime | None = None) -> str:
    """``20261130T074012.123456Z-3f9a1c2b``: sorts by start time, unique by the random tail."""
    now = now or datetime.now(UTC)
    return now.strftime("%Y%m%dT%H%M%S.%fZ") + "-" + os.urandom(4).hex()  # as secrets.token_hex(4)


def run_ref(run_id: str) -> str:
    return f"runs/{run_id}"
