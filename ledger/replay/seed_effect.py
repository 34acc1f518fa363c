"""Seeds mode only means something if the seed changed the runs: checks that it did.

Two signs that it did not, either one enough to refuse a verdict: the seed never reached the
script (no ``ledger.seed()`` / ``current_seeds()`` took ``LEDGER_SEED_ROOT``, or the argument
parser never saw the ``--seed-arg`` value), or every replayed seed gave exactly the same value.
"""

from __future__ import annotations

from typing import Any

from ..errors import LedgerError, ReplayError
from ..records.run import Run
from ..store import Store

__all__ = ["check_seed_effect", "with_seed_arg"]


def with_seed_arg(argv: list[str], flag: str, value: str) -> list[str]:
    """``argv`` with ``flag`` set to ``value``: replaced where the command line has it (as
    ``FLAG VALUE`` or ``FLAG=VALUE``), else appended, for a seed left to its default."""
    out = list(argv)
    for i, a in enumerate(out):
        if a == flag and i + 1 < len(out):
            out[i + 1] = value
            return out
        if a.startswith(flag + "="):
            out[i] = f"{flag}={value}"
            return out
    # Not given: a parser default. Options take "FLAG VALUE"; Hydra-style keys take KEY=VALUE.
    return out + ([flag, value] if flag.startswith("-") else [f"{flag}={value}"])


def _env_seed_taken(run: Run, root: int) -> bool:
    """The runtime resolved its root from LEDGER_SEED_ROOT = ``root`` (``ledger.seed()``)."""
    seeds = (run.runtime or {}).get("seeds") or []
    return any(
        isinstance(s, dict) and s.get("root") == root and s.get("root_source") == "env"
        for s in seeds
    )


def _values(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [v for item in value.values() for v in _values(item)]
    if isinstance(value, list):
        return [v for item in value for v in _values(item)]
    return [value]


def _arg_seed_taken(store: Store, run: Run, value: int) -> bool | None:
    """Whether a parsed config (argparse namespace, Hydra config) holds ``value``; None when
    the process parsed none, so nothing is known."""
    if run.resolved_config is None:
        return None
    try:
        capture = store.get_json(run.resolved_config)
    except LedgerError:
        return None
    parsed = [a.get("namespace") for a in capture.get("argparse") or [] if isinstance(a, dict)]
    parsed += [h.get("config") for h in capture.get("hydra") or [] if isinstance(h, dict)]
    if not parsed:
        return None
    return any(str(v) == str(value) for v in _values(parsed) if not isinstance(v, bool))


def check_seed_effect(
    store: Store,
    replays: list[Run],
    seeds: list[int],
    values: list[float | None],
    metric: str,
    seed_arg: str | None,
) -> None:
    """Raise ReplayError unless every replay took its seed and the seeds changed ``metric``.

    ``seeds`` are what each replay was given: the LEDGER_SEED_ROOT root, or the value put on
    the command line after ``seed_arg``."""
    finished = [(r, s) for r, s, v in zip(replays, seeds, values, strict=True) if v is not None]
    if seed_arg is None:
        missed = [r.run_id for r, s in finished if not _env_seed_taken(r, s)]
        how = "LEDGER_SEED_ROOT was set but the script never read it through ledger.seed()"
        hint = (
            "call ledger.seed() in the script, or pass the seed on the command line with "
            "--seed-arg FLAG (e.g. --seed-arg --seed)"
        )
    else:
        missed = [r.run_id for r, s in finished if _arg_seed_taken(store, r, s) is False]
        how = f"the script's argument parser never took the seed given with {seed_arg}"
        hint = f"check that the script parses {seed_arg} and seeds its generators from it"
    if missed:
        raise ReplayError(
            f"seeds mode: the seed never reached {len(missed)} of {len(finished)} replay(s) "
            f"({how}), so they are not runs of different seeds; no verdict was written "
            f"(replays: {', '.join(missed[:3])}{' …' if len(missed) > 3 else ''})",
            hint=hint,
        )
    finite = [v for v in values if v is not None]
    if len(finite) >= 2 and len({repr(float(v)) for v in finite}) == 1:
        raise ReplayError(
            f"seeds mode: all {len(finite)} replayed seeds gave {metric} = {finite[0]!r}: the "
            "seed had no effect, so there is no spread to compare with; no verdict was written",
            hint="make the script seed its randomness from the seed ledger gives it "
            "(ledger.seed(), or --seed-arg FLAG), or choose a metric that varies with --metric",
        )
