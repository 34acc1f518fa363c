"""One replay run: rebuild the workspace, run the recorded command again under ``record``, and
return the new run. The engine (modes, verdicts) and the seed executors both call it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from .._progress import stage
from ..errors import ReplayError
from ..records.contract import Contract
from ..records.run import Run
from ..store import Store
from .child_env import child_env
from .options import ReplayOptions
from .seed_effect import with_seed_arg
from .workspace import Workspace

__all__ = ["REDACTED", "ReplayInterrupted", "replay_env"]

REDACTED = "***"

# What judging a replay needs once its command has exited, imported while it runs
# (ledger/run/warm.py): the comparators, and the models built at their first use.
_JUDGE_MODULES = (
    "ledger.replay.compare",
    "ledger.records.metrics:MetricSeries",
    "ledger.records.metrics:MetricSummary",
    "ledger.records.verdict:Verdict",
)


class ReplayInterrupted(ReplayError):
    """The replay itself was stopped (Ctrl-C, SIGTERM): no verdict is recorded. Exits
    128 + the signal: 130 for Ctrl-C."""

    def __init__(
        self, signum: int, message: str, *, hint: str | None = None, run_id: str | None = None
    ) -> None:
        super().__init__(message, hint=hint)
        self.exit_code = 128 + signum
        self.run_id = run_id  # the replay run sealed as interrupted, where there is one


def replay_env(
    contract: Contract,
    opts: ReplayOptions,
    controlled: Mapping[str, str] | None = None,
    inherited: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The variables a replay sets over this process's environment for its command: the
    recorded ones (``--env`` and those that change numerics), then ``opts.extra_env``, then
    the ``controlled`` ones ledger chose (replay/child_env.py); those ledger controls that
    ``inherited`` has are cleared. Secrets were redacted in the record: for those the current
    value is kept. The drift check compares the recorded environment with this one (engine),
    not with the shell's."""
    recorded = {
        k: v for k, v in contract.env_vars.items() if REDACTED not in v and "[REDACTED:" not in v
    }
    return child_env(recorded, opts.extra_env, controlled or {}, inherited)


def _one_replay(
    store: Store,
    run: Run,
    contract: Contract,
    opts: ReplayOptions,
    seed_root: int | None,
    seed_value: int | None,
    resume: str | None = None,
    made: list[Path] | None = None,
    controlled: Mapping[str, str] | None = None,
) -> tuple[Run, Workspace]:
    """One replay run; ``made`` collects its workspace as soon as it exists, so that a
    failure anywhere later can still remove it. ``resume`` and ``controlled`` (the localize
    passes' switches, a seed's GPUs) are variables ledger sets over ``opts.extra_env``."""
    from ..capture.rawbytes import argv_to_run
    from ..capture.secrets import restore_argv
    from ..run.options import RecordOptions
    from ..run.record import record
    from .workspace import build_workspace, restore_resume_sources

    # The exact bytes when they were stored; secrets come from the environment again.
    argv = restore_argv(argv_to_run(contract.argv, contract.argv_b64), os.environ)
    with stage("building the replay workspace"):
        ws = build_workspace(
            store, contract, parent=opts.workspace_parent, keep=opts.keep_workspace
        )
    if made is not None:
        made.append(ws.root)
    restore_resume_sources(store, run, ws)
    if seed_value is not None and opts.seed_arg:
        argv = with_seed_arg(argv, opts.seed_arg, str(seed_value))
    # The verdict (``from_checkpoint``) and the localize passes' step offsets are stated for
    # this checkpoint, so the program must resume from it: never from one ``extra_env`` names.
    own = {**(controlled or {}), **({"LEDGER_RESUME_FROM": resume} if resume is not None else {})}
    env = replay_env(contract, opts, own, os.environ)
    result = record(
        RecordOptions(
            command=argv,
            name=run.name,
            inputs=[Path(i["path"]) for i in contract.inputs],
            outputs=[Path(o) for o in contract.outputs],
            metrics=list(contract.metric_patterns),
            env_names=list(contract.env_names),
            tags=dict(run.tags),
            cwd=ws.run_dir,
            store_inputs=False,
            replay_of=run.run_id,
            extra_env=env,
            seed_root=seed_root,
            code=contract.code,
            warm=(*_JUDGE_MODULES, *opts.warm),
            update_index=False,  # the engine updates it once the verdict is stored
        ),
        store,
    )
    if result.run.interrupted_by is not None:
        # The signal came to the replay, not from the program: the attempt stays recorded as
        # an interrupted run, but it says nothing about reproducibility.
        raise ReplayInterrupted(
            result.run.interrupted_by,
            f"the replay was interrupted by signal {result.run.interrupted_by}; its run "
            f"{result.run.run_id} is recorded as {result.run.status} and no verdict was stored",
            hint=f"run `ledger replay {run.run_id}` again to get a verdict",
            run_id=result.run.run_id,
        )
    return result.run, ws
