"""Seeds mode only means something if the seed changed the runs: checks that it did, as early
as it can be known, because each replay is a full training run.

- Before any replay (:func:`refuse_unvarying_seed`): the original run shows that no seed ledger
  gives can reach the program: it never read the ledger seed (no ``ledger.seed()`` /
  ``current_seeds()``) and no ``--seed-arg`` was given, or the strict argument parser it used
  has no ``--seed-arg`` option. The hint names what this program has: a seed option or key
  (``--seed-arg`` for it), or nothing (``ledger.seed()``).
- As the replays end (:func:`check_first_replays`): a replay that did not take its seed, or the
  first two replays agreeing exactly (every metric value bit for bit): the seed had no effect,
  and the seeds not started yet are not run.
- At the end (:func:`check_seed_effect`): the same for all of them, and every replayed seed
  giving exactly the same value of the main metric.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..errors import LedgerError, ReplayError
from ..records.run import Run
from ..store import Store

__all__ = [
    "check_first_replays",
    "check_seed_effect",
    "refuse_unvarying_seed",
    "seed_parameters",
    "with_seed_arg",
]


def with_seed_arg(argv: list[str], flag: str, value: str) -> list[str]:
    """``argv`` with ``flag`` set to ``value``: replaced where the command line has it (as
    ``FLAG VALUE`` or ``FLAG=VALUE``), else appended, for a seed left to its default: a long
    option as one ``--FLAG=VALUE`` word, which argparse, click, absl and fire read as well as
    the ``--key=value`` configurators of script-style programs (which refuse ``--key value``)."""
    out = list(argv)
    for i, a in enumerate(out):
        if a == flag and i + 1 < len(out):
            out[i + 1] = value
            return out
        if a.startswith(flag + "="):
            out[i] = f"{flag}={value}"
            return out
    # Not given: a parser default. A short option takes "-s VALUE" (argparse reads "-s=1" as
    # "=1"); long options and Hydra-style keys take one FLAG=VALUE word.
    short = flag.startswith("-") and not flag.startswith("--")
    return out + ([flag, value] if short else [f"{flag}={value}"])


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


def _capture(store: Store, run: Run) -> dict[str, Any]:
    """The config the run's process parsed (argparse, Hydra, ...), or {} when none is stored."""
    if run.resolved_config is None:
        return {}
    try:
        capture = store.get_json(run.resolved_config)
    except LedgerError:
        return {}
    return capture if isinstance(capture, dict) else {}


def _arg_seed_taken(store: Store, run: Run, value: int) -> bool | None:
    """Whether a parsed config (argparse namespace, Hydra config) holds ``value``; None when
    the process parsed none, so nothing is known."""
    capture = _capture(store, run)
    parsed = [a.get("namespace") for a in capture.get("argparse") or [] if isinstance(a, dict)]
    parsed += [h.get("config") for h in capture.get("hydra") or [] if isinstance(h, dict)]
    if not parsed:
        return None
    return any(str(v) == str(value) for v in _values(parsed) if not isinstance(v, bool))


_SEED_NAME = re.compile(r"(?:^|_)seed(?:$|_)", re.IGNORECASE)


def _seed_keys(value: Any, prefix: str = "") -> list[str]:
    """Dotted paths of the seed-like keys (``seed``, ``random_seed``, ``seed_value``) of a
    parsed config whose values are integers."""
    out: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            path = f"{prefix}{k}"
            if isinstance(v, dict):
                out += _seed_keys(v, path + ".")
            elif _SEED_NAME.search(str(k)) and isinstance(v, int) and not isinstance(v, bool):
                out.append(path)
    return out


def _option_for(dest: str, argv: Sequence[str]) -> str:
    """The command-line option that sets argparse's ``dest``: as the recorded command line
    spells it when it is there, else ``--dest`` with dashes."""
    spellings = (f"--{dest}", f"--{dest.replace('_', '-')}")
    for a in argv:
        name = a.partition("=")[0]
        if name in spellings:
            return name
    return spellings[1]


def seed_parameters(store: Store, run: Run, argv: Sequence[str]) -> list[str]:
    """What ``--seed-arg`` could be for this run: the options of its argument parsers and the
    keys of its Hydra configs whose names say seed, as ``--seed-arg`` takes them."""
    capture = _capture(store, run)
    found: list[str] = []
    for a in capture.get("argparse") or []:
        if isinstance(a, dict):
            found += [_option_for(k, argv) for k in _seed_keys(a.get("namespace") or {})]
    for h in capture.get("hydra") or []:
        if isinstance(h, dict):
            found += _seed_keys(h.get("config") or {})
    if not found:  # other captured values (script globals set by --key=value, ...)
        found += [f"--{k}" for k in _seed_keys(capture.get("resolved") or {}) if "." not in k]
    return list(dict.fromkeys(found))


def _strict_parsers_lack(store: Store, run: Run, flag: str) -> list[str] | None:
    """The options the run's argument parsers took, when every parser it used was strict
    (``parse_args``: an unknown option is an error) and none has ``flag``; else None (the flag
    may reach the program some other way, which only a replay shows)."""
    capture = _capture(store, run)
    parsed = [a for a in capture.get("argparse") or [] if isinstance(a, dict)]
    if not flag.startswith("-") or not parsed or capture.get("hydra"):
        return None
    if any(a.get("method") != "parse_args" for a in parsed):
        return None
    dest = flag.lstrip("-").replace("-", "_")
    dests = [str(k) for a in parsed for k in (a.get("namespace") or {})]
    return None if dest in dests else dests


def refuse_unvarying_seed(
    store: Store, run: Run, argv: Sequence[str], seed_arg: str | None
) -> None:
    """Raise ReplayError, before any replay runs, when the original run shows that no seed
    the replays are given can reach its program."""
    if seed_arg is None:
        if any(isinstance(s, dict) for s in (run.runtime or {}).get("seeds") or []):
            return  # it called ledger.seed() / current_seeds(): LEDGER_SEED_ROOT reaches it
        params = seed_parameters(store, run, argv)
        if params:
            hint = (
                f"its command line takes a seed: replay with --seed-arg {params[0]}"
                + (f" (seed parameters found: {', '.join(params)})" if len(params) > 1 else "")
                + ", or call ledger.seed() in the script"
            )
        else:
            hint = (
                "the program has no seed parameter that ledger found (no argparse option or "
                "Hydra key named like seed): call ledger.seed() at its start, which takes the "
                "seed each replay gives it, or give it a seed option and replay with "
                "--seed-arg FLAG"
            )
        raise ReplayError(
            f"seeds mode: the seed cannot vary: run {run.run_id} never read the ledger seed "
            "(no ledger.seed() or ledger.current_seeds() call) and no --seed-arg was given, "
            "so every replay would run with the same seed; no replay was run",
            hint=hint,
        )
    took = _strict_parsers_lack(store, run, seed_arg)
    if took is not None:
        params = seed_parameters(store, run, argv)
        raise ReplayError(
            f"seeds mode: the script's argument parser has no {seed_arg} option (it took: "
            f"{', '.join(took[:12]) or 'nothing'}), so the seed cannot reach it; no replay "
            "was run",
            hint=(
                f"replay with --seed-arg {params[0]}"
                if params
                else "give the script a seed option, or call ledger.seed() in it"
            ),
        )


def _missed(store: Store, finished: list[tuple[Run, int]], seed_arg: str | None) -> None:
    """Raise ReplayError when a finished replay did not take the seed it was given."""
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


def _all_values(store: Store, run: Run) -> dict[tuple[str, int], float]:
    from ..run.series import run_series

    return run_series(store, run)


def _same(a: dict[tuple[str, int], float], b: dict[tuple[str, int], float]) -> bool:
    from ..stats import bitwise_equal

    return a.keys() == b.keys() and all(bitwise_equal(v, b[k]) for k, v in a.items())


def check_first_replays(
    store: Store,
    finished: list[tuple[Run, int, float | None]],
    metric: str,
    seed_arg: str | None,
    total: int,
) -> None:
    """Called each time a replay ends, with the finished ones in the order they ended (run,
    seed given, main metric): raise ReplayError as soon as one did not take its seed, or when
    the first two with a value of ``metric`` agree exactly, every metric value bit for bit.
    The seeds not started yet are then not run."""
    _missed(store, [(r, s) for r, s, v in finished if v is not None], seed_arg)
    valued = [(r, v) for r, _, v in finished if v is not None]
    if len(valued) != 2:
        return  # decided once, when the second value comes in
    (a, va), (b, vb) = valued
    if repr(float(va)) != repr(float(vb)):  # type: ignore[arg-type]
        return
    series_a = _all_values(store, a)
    if not _same(series_a, _all_values(store, b)):
        return
    raise ReplayError(
        f"seeds mode: the first two replayed seeds gave identical results ({metric} = {va!r}, "
        f"and all {len(series_a)} metric values bit for bit): the seed had no effect, so "
        f"there is no spread to compare with; the other {total - len(finished)} seed(s) were "
        f"stopped or not started and no verdict was written (replays: {a.run_id}, {b.run_id})",
        hint="make the script seed its randomness from the seed ledger gives it "
        "(ledger.seed(), or --seed-arg FLAG), or choose a metric that varies with --metric",
    )


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
    _missed(store, finished, seed_arg)
    finite = [v for v in values if v is not None]
    if len(finite) >= 2 and len({repr(float(v)) for v in finite}) == 1:
        raise ReplayError(
            f"seeds mode: all {len(finite)} replayed seeds gave {metric} = {finite[0]!r}: the "
            "seed had no effect, so there is no spread to compare with; no verdict was written",
            hint="make the script seed its randomness from the seed ledger gives it "
            "(ledger.seed(), or --seed-arg FLAG), or choose a metric that varies with --metric",
        )
