"""The third pass of ``ledger replay --localize``: torch names the operation, or says it can't.

Two traced passes from one checkpoint that differ in a module's forward (or in a gradient)
on identical inputs found an operation that gave other bits on the same inputs. A third
pass from the same checkpoint, stopped at that step, runs with
``torch.use_deterministic_algorithms(True)`` (and ``CUBLAS_WORKSPACE_CONFIG``, which CUDA's
matrix products need under it). torch raises ``RuntimeError: <op> does not have a
deterministic implementation ...`` on an operation it knows to be nondeterministic: the
report names that operation with torch's words, and where the pass raised it
(``ledger.torch.localize_pass`` prints the step and module before the traceback). A pass
that runs clean says that no operation torch polices ran on the path, so the difference
comes from something torch does not see (a thread pool's order, an unseeded generator).

The pass's stderr, stored with its run, is where both are read back: nothing else is shared
between the replay and the program.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from ..records.contract import Contract
from ..records.run import Run
from ..store import Store
from .localize_causes import suggestion
from .options import ReplayOptions
from .single import _one_replay

__all__ = ["CUBLAS", "DETERMINISTIC_ENV", "MARK", "name_the_operation", "read_error"]

DETERMINISTIC_ENV = "LEDGER_LOCALIZE_DETERMINISTIC"  # read by ledger.torch.localize_pass
MARK = "ledger: --localize deterministic pass: raised at"  # printed by it
CUBLAS = ":4096:8"  # CUBLAS_WORKSPACE_CONFIG that torch asks for under deterministic algorithms
_SETTING = "torch.use_deterministic_algorithms(True)"
_TORCH = re.compile(r"(?:^|: )([^:\n]+?) does not have a deterministic implementation[^\n]*")
_WHERE = re.compile(re.escape(MARK) + r" pass step (-?\d+), in ([^\n]+)")
_QUOTED = 160  # characters of torch's error quoted in the line (its first sentence)


def read_error(stderr: str) -> dict[str, Any] | None:
    """torch's determinism error in a pass's stderr: the operation, its words, where it was
    raised (the pass's step, the module), or None when torch raised none."""
    hit = _TORCH.search(stderr)
    if hit is None:
        return None
    text = hit.group(0).removeprefix(": ").strip()
    where = _WHERE.search(stderr)
    return {
        "operation": hit.group(1).strip(),
        "error": text,
        "pass_step": int(where.group(1)) if where else None,
        "in": where.group(2).strip() if where else None,
    }


def name_the_operation(
    store: Store,
    run: Run,
    contract: Contract,
    opts: ReplayOptions,
    root: int | None,
    made: list[Path],
    loc: dict[str, Any],
    ckpt: str,
    ckpt_step: int,
) -> None:
    """Run the third pass when ``loc`` blames an operation; rewrite its cause and line."""
    if loc.get("cause") != "nondeterministic-op" or loc.get("phase") not in (
        "forward",
        "backward",
    ):
        return
    limit = int(loc["trace_step"]) + 1
    offset = ckpt_step + 1
    what = (
        f"the forward of {loc['module']} ({loc['kind']})"
        if loc["phase"] == "forward"
        else f"the gradient of {loc.get('parameter')}"
    )
    if opts.on_localize is not None:
        opts.on_localize(
            f"localizing: the passes differ in {what} on identical inputs; a third pass from "
            f"the checkpoint of step {ckpt_step} under {_SETTING}, to name the operation from "
            f"torch's error: {limit} step(s) at most (to step {loc['step']})"
        )
    env = {**opts.extra_env}
    env.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS)
    pass_opts = dataclasses.replace(opts, extra_env=env, localize=False, from_checkpoint=None)
    switches = {DETERMINISTIC_ENV: "1", "LEDGER_LOCALIZE_STEPS": str(limit)}
    third = _one_replay(store, run, contract, pass_opts, root, None, ckpt, made, switches)[0]
    stderr = ""
    if third.stderr is not None:
        stderr = store.objects.get_bytes(third.stderr).decode("utf-8", "replace")
    found = read_error(stderr)
    chain, _, _ = loc["line"].partition(" → ")
    record: dict[str, Any] = {"run": third.run_id, "exit_code": third.exit_code}
    loc.setdefault("resumed", {})["deterministic_pass"] = record
    if found is not None:
        step = found["pass_step"]
        at = f" at step {step + offset}" if step is not None and step >= 0 else ""
        where = f"raised in {found['in']}{at}" if found["in"] else f"raised{at}"
        quoted = found["error"].split(". ", 1)[0].rstrip(".")[:_QUOTED].rstrip()
        record.update(found, step=step + offset if step is not None and step >= 0 else None)
        op = found["operation"]
        loc["operation"] = op
        loc["line"] = (
            f'{chain} → {op} has no deterministic implementation here (torch: "{quoted}…"; '
            f"{where} of a third pass under {_SETTING})"
        )
        loc["suggestion"] = (
            f"replace {op} by an operation torch implements deterministically (or accept the "
            f"variation it brings); ledger.torch.deterministic() keeps torch's check on"
        )
        return
    if third.exit_code == 0:
        what_, todo, doc = suggestion("unflagged-nondeterminism")
        loc.update(cause="unflagged-nondeterminism", suggestion=todo, doc=doc)
        loc["line"] = (
            f"{chain} → {what_}: a third pass under {_SETTING} ran clean to step "
            f"{loc['step']}, so no operation torch knows to be nondeterministic ran there"
        )
        return
    loc["line"] = (
        f"{loc['line']}; a third pass under {_SETTING} failed (exit {third.exit_code}) without "
        f"torch's determinism error: see its stderr (`ledger log {third.run_id} --stderr`)"
    )
