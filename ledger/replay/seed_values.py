"""The seeds a seeds-mode replay runs: drawn at random, or the ones the user gave
(``--seed-values 11,12,13``), so that a seeds verdict can be run again on the same seeds and
comes out the same for a program that is deterministic given its seed.

Given seeds are refused, before any replay runs, when they cannot stand for new seeds of the
original: a repeated value (one run counted twice), not one value per ``--seeds``, a value out
of range (below 0; from 2**31 on with ``--seed-arg``, where the value goes on the command line
of a script that may parse it into a 32-bit seed; from 2**63 on as a ``LEDGER_SEED_ROOT``) —
``options.check_seed_values``, as the arguments are read — or the original's own seed (its
replay is the original again, not another draw), here, once the original is loaded.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from .seed_effect import _capture

if TYPE_CHECKING:
    from ..records.run import Run
    from ..store import Store
    from .options import ReplayOptions

__all__ = ["seed_roots"]


def _argv_value(argv: Sequence[str], flag: str) -> str | None:
    """The value ``flag`` has on a command line (``FLAG VALUE`` or ``FLAG=VALUE``), if any."""
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(flag + "="):
            return a[len(flag) + 1 :]
    return None


def _parsed_value(store: Store, run: Run, flag: str) -> Any:
    """What the original's parsed config holds for ``flag``, when its command line left it to
    a default: an argparse option's ``dest`` (``--random-seed``: ``random_seed``) or a Hydra
    key's dotted path (``training.seed``)."""
    capture = _capture(store, run)
    if flag.startswith("-"):
        dest = flag.lstrip("-").replace("-", "_")
        for a in capture.get("argparse") or []:
            namespace = a.get("namespace") if isinstance(a, dict) else None
            if isinstance(namespace, dict) and dest in namespace:
                return namespace[dest]
        return None
    for h in capture.get("hydra") or []:
        value = h.get("config") if isinstance(h, dict) else None
        for key in flag.split("."):
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None:
            return value
    return None


def _original_seed(
    opts: ReplayOptions, store: Store, run: Run, argv: Sequence[str], root: int | None
) -> tuple[int, str] | None:
    """The seed the original ran with, as the replays are given theirs, and where it was
    found: the value of ``--seed-arg`` on its command line or, left to the parser's default,
    in its parsed config; without ``--seed-arg``, its root seed."""
    if not opts.seed_arg:
        return (root, f"root {root}") if root is not None else None
    value: Any = _argv_value(argv, opts.seed_arg)
    where = "on its command line"
    if value is None:
        value, where = _parsed_value(store, run, opts.seed_arg), "its parser's default"
    if isinstance(value, bool):
        return None
    try:
        seed = int(value, 10) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        return None
    return seed, f"{opts.seed_arg} {seed}, {where}"


def seed_roots(
    opts: ReplayOptions, store: Store, run: Run, argv: Sequence[str], original_root: int | None
) -> list[int]:
    """The replays' roots, one per seed: ``--seed-values`` as given (refused when one is the
    original's own seed: ``argv`` its command line, ``original_root`` its root seed), else
    drawn at random (63 bits)."""
    if opts.seed_values is None:
        return [secrets.randbits(63) for _ in range(opts.seeds)]
    opts.validate()  # a caller that built the options itself
    found = _original_seed(opts, store, run, argv, original_root)
    own, where = found if found is not None else (None, "")
    if own is not None and own in opts.seed_values:
        raise UsageError(
            f"--seed-values {own} is the original's own seed ({where}): its replay would be "
            "the original run again, not another seed",
            hint="give seeds the original did not run with",
        )
    return list(opts.seed_values)
