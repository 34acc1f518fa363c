"""The variables ledger itself sets for a replayed program, and the check that keeps a caller's
``extra_env`` off them.

A replay's verdict is stated for what ledger gave the program: its own run (``LEDGER_RUN_ID``,
``LEDGER_RUN_DIR``, ``LEDGER_DIR``, ``LEDGER_HOOK_DIR``, set by ``ledger/run/record.py``), the
recorded or chosen seed root, the checkpoint it resumes from, the localize passes' step limit
and determinism switch, and the GPUs a seed is handed. ``extra_env`` naming one of them would
change what the program does while the verdict still describes the setting ledger chose, so
it is refused before any work (``check_extra_env``); ``child_env`` is the one place the
controlled values are put over the caller's, and it takes no name outside this module's set.
It also clears those the replaying process inherited (an exported ``LEDGER_SEED_ROOT``) that
neither the record nor the replay sets: the program gets what the original got.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import UsageError

__all__ = ["CONTROLLED_ENV", "DEVICES_ENV", "check_extra_env", "child_env"]

_OWN_RUN = "ledger sets it to the replay's own run; leave it out"
# Set by ledger/run/record.py for every run, over whatever the environment had.
_SET_BY_RECORD = ("LEDGER_DIR", "LEDGER_RUN_ID", "LEDGER_RUN_DIR", "LEDGER_HOOK_DIR")

# Name -> what to use instead. ``ledger/run/record.py`` sets the first four for every recorded
# run (tests/replay/test_replay_child_env.py checks this list covers them).
CONTROLLED_ENV: Mapping[str, str] = {
    "LEDGER_DIR": "the replay records in the ledger it replays from: choose that one with "
    "--ledger (the Store given to replay())",
    "LEDGER_RUN_ID": _OWN_RUN,
    "LEDGER_RUN_DIR": _OWN_RUN,
    "LEDGER_HOOK_DIR": _OWN_RUN,
    "LEDGER_SEED_ROOT": "a replay gets the original's seed root; to replay other seeds use "
    "--mode seeds with --seed-values (ReplayOptions(mode='seeds', seed_values=[...]))",
    "LEDGER_RESUME_FROM": "use --from-checkpoint (ReplayOptions(from_checkpoint=...)) to "
    "resume from a checkpoint",
    "LEDGER_LOCALIZE_STEPS": "use --localize (ReplayOptions(localize=True)): it sets this for "
    "its passes",
    "LEDGER_LOCALIZE_DETERMINISTIC": "use --localize (ReplayOptions(localize=True)): it sets "
    "this for its third pass",
}

# Set by replay only when it hands out GPUs (--devices, or a seed job's own): otherwise a
# caller may choose the GPU a replay runs on.
DEVICES_ENV = "CUDA_VISIBLE_DEVICES"
_DEVICES_INSTEAD = "--devices hands each seed its GPUs (ExecutorOptions(devices=...))"


def check_extra_env(extra_env: Mapping[str, str], *, sets_devices: bool) -> None:
    """Refuse an ``extra_env`` that names a variable the replay sets itself (``sets_devices``:
    the executor hands each seed its GPUs, ``ExecutorOptions.sets_devices``)."""
    for name in sorted(extra_env):
        instead = CONTROLLED_ENV.get(name)
        if instead is None and name == DEVICES_ENV and sets_devices:
            instead = _DEVICES_INSTEAD
        if instead is not None:
            raise UsageError(
                f"extra_env names {name}, which replay sets for the replayed program itself "
                "(the verdict is stated for ledger's value)",
                hint=instead,
            )


def child_env(
    recorded: Mapping[str, str],
    extra: Mapping[str, str],
    controlled: Mapping[str, str],
    inherited: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The variables set over this process's environment (``inherited``) for a replayed
    command: the recorded ones, then the caller's ``extra``, then ``controlled`` (ledger's
    own: resume point, localize passes, GPUs), which always win. A controlled variable that
    this process has but that neither the record nor this replay sets (an exported
    ``LEDGER_SEED_ROOT`` in the replaying shell) is set empty, which ledger's readers take
    for unset: the program gets what the original got, not the shell's value (the run's own
    variables ``ledger record`` sets anyway)."""
    stray = sorted(set(controlled) - {*CONTROLLED_ENV, DEVICES_ENV})
    if stray:  # a new controlled variable goes into CONTROLLED_ENV, so the check refuses it
        raise ValueError(f"not a replay-controlled variable: {', '.join(stray)}")
    cleared = {
        name: ""
        for name in CONTROLLED_ENV
        if (inherited or {}).get(name) and name not in (*_SET_BY_RECORD, *recorded, *controlled)
    }
    return {**recorded, **extra, **cleared, **controlled}
