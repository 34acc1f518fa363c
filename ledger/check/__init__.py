"""``ledger check``: the layered verification ladder of a training setup.

Importing this package does not import torch; ``run_ladder`` does when it runs.
"""

from __future__ import annotations

from .ladder import DEFAULT_LEVELS, LEVEL_NAMES, CheckResult, run_ladder, store_check
from .spec import LoadedSpec, Spec, load_spec

__all__ = [
    "DEFAULT_LEVELS",
    "LEVEL_NAMES",
    "CheckResult",
    "LoadedSpec",
    "Spec",
    "load_spec",
    "run_ladder",
    "store_check",
]
