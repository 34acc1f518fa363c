"""``ledger replay RUN --localize`` for a run recorded without a trace.

The replay's metrics say where it first diverged (step S). The original's last checkpoint
saved before S (step C) is where both passes start: the program is replayed twice from it
(``LEDGER_RESUME_FROM``) with ``LEDGER_LOCALIZE_STEPS=S-C+1``. A program that resumes
through ``ledger.torch.load_checkpoint(..., state={...})`` is then traced on every step
from the resume on (``ledger.torch.localize_pass``) and ends after those steps, so a pass
costs at most one checkpoint interval (and one step). The two passes' traces are compared
by the rules of ``localize``: two passes of the same program under the same conditions that
differ name an operation, a module or a generator that is not deterministic here. Passes
that agree say the cause is not in this replay's own nondeterminism but in what differs
between the recording and now (the environment drift, ``ledger diff``). Passes that differ
in an operation on identical inputs get a third, under torch's deterministic algorithms, to
name it (``localize_determinism``). The steps reported are the original's.

Refused, with what to add, when the run saved no checkpoint before S or when the passes
recorded no trace (the program does not resume through ``load_checkpoint``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ..records.contract import Contract
from ..records.run import Run
from ..stats import SeriesComparison
from ..store import Store
from .localize import load_traces, localize
from .localize_determinism import name_the_operation
from .options import ReplayOptions
from .single import _one_replay

__all__ = ["STEPS_ENV", "localize_from_checkpoint"]

STEPS_ENV = "LEDGER_LOCALIZE_STEPS"  # read by ledger.torch.localize_pass (a layer below)
_DOC = "docs/how-to/localize-divergence.md#without-a-trace"


def _first_step(series: SeriesComparison) -> int | None:
    steps = [d.step for d in (series.first_divergence, series.first_structural) if d is not None]
    return min(steps) if steps else None


def _refused(line: str, **more: Any) -> dict[str, Any]:
    return {"found": False, "comparable": False, "line": line, "doc": _DOC, **more}


def localize_from_checkpoint(
    store: Store,
    run: Run,
    contract: Contract,
    opts: ReplayOptions,
    series: SeriesComparison,
    root: int | None,
    made: list[Path],
) -> dict[str, Any]:
    """The localization (``localize``'s dict) from two traced passes, or a refusal."""
    first = _first_step(series)
    if first is None:
        return _refused(
            "--localize: no logged metric diverged (only the exit status or files did), so "
            "there is no step to resume before; nothing was run"
        )
    saves = sorted(
        {
            (e.step, e.checkpoint_digest)
            for e in run.checkpoints
            if e.event == "save" and e.step is not None
        }
    )
    before = [s for s in saves if s[0] < first]
    if not before:
        return _refused(
            f"--localize: the run saved no checkpoint before step {first}, where its metrics "
            "first diverged; nothing was run (save checkpoints with "
            "ledger.torch.save_checkpoint(state, step=step) and resume them with "
            "load_checkpoint(ledger.resume_from(), state=state))"
        )
    step, ckpt = before[-1]
    limit = first - step + 1
    later = [s for s, _ in saves if s > step]
    interval = f"; the checkpoints are {later[0] - step} steps apart" if later else ""
    if opts.on_localize is not None:
        opts.on_localize(
            f"localizing: metrics first diverged at step {first}; replaying twice from the "
            f"checkpoint of step {step} with tracing on, {limit} step(s) per pass at most "
            f"(one checkpoint interval){interval}"
        )
    steps = {STEPS_ENV: str(limit)}
    pass_opts = dataclasses.replace(opts, localize=False, from_checkpoint=None)
    passes = [_one_replay(store, run, contract, pass_opts, root, None, ckpt, made, steps)[0]]
    passes.append(_one_replay(store, run, contract, pass_opts, root, None, ckpt, made, steps)[0])
    where = {
        "checkpoint": ckpt,
        "checkpoint_step": step,
        "diverged_at": first,
        "steps_per_pass": limit,
        "passes": [p.run_id for p in passes],
    }
    ta, tb = load_traces(store, passes[0]), load_traces(store, passes[1])
    if not ta or not tb:
        return _refused(
            f"--localize: the two passes from the checkpoint of step {step} recorded no "
            "trace: the program must resume through ledger.torch.load_checkpoint("
            "ledger.resume_from(), state={'model': model, 'optimizer': opt, ...}) (it then "
            "traces the model and optimizer it restores), or call ledger.torch.trace itself",
            resumed=where,
        )
    # A pass counts its steps from 0, the first step it ran: the step after the checkpoint's
    # (save_checkpoint(state, step=step) saves a step once it is done, and the program resumes
    # from the next one). The report names the original's steps.
    loc = localize(ta, tb, offset=step + 1)
    loc["resumed"] = where
    prefix = f"two traced passes from the checkpoint of step {step}"
    if loc.get("found"):
        rank = loc.get("rank")
        head = f"rank {rank}, step {loc['step']}" if rank is not None else f"step {loc['step']}"
        rest = loc["line"][len(head) :] if loc["line"].startswith(head) else f": {loc['line']}"
        loc["line"] = f"{head} ({prefix}){rest}"
        name_the_operation(store, run, contract, opts, root, made, loc, ckpt, step)
    elif loc.get("comparable"):
        loc["line"] = (
            f"{prefix}: {loc['line']}: this replay is deterministic from there, so the cause "
            "is what differs between the recording and this replay (the environment drift "
            "above; `ledger diff` of the original and the replay)"
        )
    return loc
