"""Freezing a run's contract before launch, and the post-run checks that complete it.

Before launch: code snapshot, config files, input digests, environment fingerprint. After exit:
inputs re-digested (a change is flagged), the config the process actually resolved (argparse
defaults included), and what the in-process runtime wrote into the staging directory.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._canonical import canonical_json
from .._hashing import hash_bytes
from .._progress import stage
from ..capture.boundary import for_store
from ..records.plain import plain
from ..store import Store
from .options import RecordOptions

if TYPE_CHECKING:  # the models load where used: a plain `ledger record` runs without pydantic
    from ..capture.secrets import Finding, Scrubber
    from ..capture.statcache import StatCache
    from ..records.code import CodeSnapshot
    from ..records.contract import Contract
    from ..records.data import InputDigest
    from ..records.run import CheckpointEvent, InputCheck

__all__ = ["Frozen", "freeze"]

# Variables replay sets again exactly as recorded (besides those named with --env).
REPLAY_ENV_PREFIXES = (
    "PYTHONHASHSEED",
    "CUBLAS_WORKSPACE_CONFIG",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    # Intel MKL's code path for its vector math (torch's CPU sqrt of float32, for one): left
    # to MKL, it is not correctly rounded and can change from one process to the next
    # (tests/trace/test_localize_replay.py, 7 December: AdamW's update of a 3,200-value
    # parameter came out otherwise in 4 of 80 recordings under load; with
    # MKL_CBWR=COMPATIBLE in none of 70).
    "MKL_CBWR",
    "MKL_ENABLE_INSTRUCTIONS",
    "OPENBLAS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_LAUNCH_BLOCKING",
    "NVIDIA_TF32_OVERRIDE",
    "NCCL_",
    "TORCH_",
    "PYTORCH_",
)


@dataclass
class Frozen:
    contract_json: dict[str, Any]  # the Contract record, as stored (ledger/records/plain.py)
    inputs: list[InputDigest]
    cache: StatCache
    notes: list[str] = field(default_factory=list)
    config_files: list[Any] = field(default_factory=list)
    scrubber: Scrubber | None = None  # the secrets known at launch, scrubbed from all captures

    @functools.cached_property
    def contract(self) -> Contract:
        """The contract as its model, validated at first use."""
        from ..records.contract import Contract

        return Contract.model_validate(self.contract_json)


def _env_vars(
    names: list[str], extra: dict[str, str], scrubber: Scrubber | None = None
) -> dict[str, str]:
    import os

    from ..capture.rawbytes import is_utf8

    chosen = {
        k: v
        for k, v in os.environ.items()
        if (
            any(k == p or (p.endswith("_") and k.startswith(p)) for p in REPLAY_ENV_PREFIXES)
            or k in names
        )
        and is_utf8(k)  # --env names are checked before; others that are not UTF-8 are left out
        and is_utf8(v)
    }
    chosen.update(extra)
    return for_store("env", chosen, scrubber, "env_vars")


def _rebuilt_code(store: Store, oid: str) -> CodeSnapshot:
    """The stored snapshot a replay's workspace was rebuilt from (its own code record)."""
    from ..records.base import record_from_json
    from ..records.code import CodeSnapshot

    snap = record_from_json(store.get_json(oid), CodeSnapshot)
    return snap


def freeze(opts: RecordOptions, store: Store) -> Frozen:
    from ..capture.code import code_digest, require_clean, snapshot_code_json
    from ..capture.config import load_config_file
    from ..capture.env import env_digest, fingerprint_json
    from ..capture.rawbytes import split_argv
    from ..capture.secrets import Scrubber, launch_secrets
    from ..capture.statcache import StatCache
    from ..capture.trees import describe

    if opts.require_clean:
        require_clean(opts.cwd, store)
    notes: list[str] = []
    cache = StatCache.for_store(store)
    inputs = []
    with stage("digesting inputs") if opts.inputs else contextlib.nullcontext():
        for p in opts.inputs:
            from ..capture.data import digest_input

            d = digest_input((opts.cwd / p).absolute(), cache)
            # Keep the path as the command line gave it: replay restores relative inputs into
            # its workspace, where the same relative argument finds them.
            given = d.model_copy(update={"path": str(p)})
            given._manifest = d._manifest
            inputs.append(given)
    cache.save()
    # Lines found clean by earlier runs skip the detectors (ledger/capture/secret_memo.py).
    from ..capture.secret_memo import CleanMemo

    memo = CleanMemo.for_store(store.root)
    scrubber = Scrubber(launch_secrets(opts.command, {**os.environ, **opts.extra_env}, memo))
    scrubber.memo = memo  # the boundary's detector skips what earlier runs found clean
    memo.save()
    found: list[Finding] = []
    config_files = []
    for p in opts.configs:
        here: list[Finding] = []
        config_files.append(load_config_file(opts.cwd / p, store, scrubber, here))
        found += [replace(f, where=str(p)) for f in here]  # named as the command line has it
    for name, cf in _named_config_files(opts, store, scrubber, found, notes):
        config_files.append(cf.model_copy(update={"path": name}))
    if found:
        notes.append(
            describe(
                "secrets redacted in the stored config files; replay writes these lines "
                "differently",
                [f.describe() for f in found],
            )
        )
    code: CodeSnapshot | dict[str, Any]
    if opts.code is not None:  # a replay: the snapshot its workspace was rebuilt from
        code, code_oid = _rebuilt_code(store, opts.code), opts.code
    else:
        code = snapshot_code_json(opts.cwd, store, scrubber=scrubber)
        notes += list(code["notes"])
        code_oid = store.put_json(code)
    env = fingerprint_json(opts.env_names, scrubber=scrubber)
    env_oid = store.put_json(env)
    # Known values first: a secret taken from $NAME becomes [REDACTED:NAME], which replay fills
    # in from the environment again; the name rules then catch the rest.
    argv, argv_b64 = split_argv(for_store("argv", opts.command, scrubber))
    contract = plain(
        "contract",
        argv=argv,
        argv_b64=argv_b64,
        cwd=str(opts.cwd.absolute()),
        code=code_oid,
        code_digest=code_digest(code),
        config_files=[c.model_dump(mode="json") for c in config_files],
        inputs=[d.model_dump(mode="json") for d in inputs],
        environment=env_oid,
        env_digest=env_digest(env),
        env_vars=_env_vars(opts.env_names, opts.extra_env, scrubber),
        seed_root=opts.seed_root,
        metric_patterns=list(opts.metrics),
        outputs=[str(p) for p in opts.outputs],
        env_names=list(opts.env_names),
    )
    return Frozen(contract, inputs, cache, notes, config_files, scrubber)


def _named_config_files(
    opts: RecordOptions,
    store: Store,
    scrubber: Scrubber,
    found: list[Finding],
    notes: list[str],
) -> list[tuple[str, Any]]:
    """Config files the command names (``detect_config_paths``) and ``--config`` did not, stored
    through the same boundary; one that cannot be read as config is named in a note instead of
    stopping the run (the program may read it as something else)."""
    from ..capture.config import detect_config_paths, load_config_file
    from ..capture.rawbytes import is_utf8
    from ..errors import UsageError

    given = {(opts.cwd / p).resolve() for p in opts.configs}
    out = []
    for name in detect_config_paths(opts.command, opts.cwd):
        path = opts.cwd / name
        if not is_utf8(name) or path.resolve() in given:
            continue
        given.add(path.resolve())
        here: list[Finding] = []
        try:
            cf = load_config_file(path, store, scrubber, here)
        except UsageError as exc:
            notes.append(
                f"{name} is named on the command line but was not read as config: {exc.message}"
            )
            continue
        found += [replace(f, where=name) for f in here]
        out.append((name, cf))
    return out


def recheck_inputs(
    frozen: Frozen, opts: RecordOptions, store: Store | None = None
) -> tuple[list[InputCheck], bool, list[str]]:
    if not frozen.inputs:
        frozen.cache.save()
        return [], False, []
    from ..capture.data import recheck, stored_in
    from ..records.run import InputCheck

    checks: list[InputCheck] = []
    changed_any = False
    for before in frozen.inputs:
        change = recheck(before, frozen.cache)
        detail: list[str] = []
        if change is not None:
            changed_any = True
            detail = [f"added {p}" for p in change.added] + [f"removed {p}" for p in change.removed]
            detail += [f"modified {p}" for p in change.modified]
            if change.error:
                detail.append(change.error)
        checks.append(
            InputCheck(
                path=before.path,
                before_digest=before.digest,
                after_digest=before.digest if change is None else change.after,
                changed=change is not None,
                detail=detail[:50],
                stored=None if store is None else stored_in(before, store),
            )
        )
    frozen.cache.save()
    return checks, changed_any, []


def resolve_config(store: Store, frozen: Frozen, staging: Path) -> tuple[str | None, str | None]:
    """The config record: files, plus what the process resolved (argparse, Hydra, absl,
    click/typer, script globals)."""
    from ..capture.config import (
        build_config_json,
        collect_capture_notes,
        collect_config_captures_json,
        collect_hydra_captures_json,
        collect_parser_captures_json,
        collect_script_captures_json,
        config_digest,
    )

    memo = frozen.scrubber.memo if frozen.scrubber is not None else None
    capture = build_config_json(
        frozen.contract_json["argv"],
        files=frozen.config_files,
        argparse=collect_config_captures_json(staging, memo),
        hydra=collect_hydra_captures_json(staging, memo),
        script=collect_script_captures_json(staging, memo),
        parsers=collect_parser_captures_json(staging, memo),
        notes=collect_capture_notes(staging),
    )
    oid = store.put_json(capture)
    return oid, config_digest(capture)


def collect_runtime_safe(
    store: Store, staging: Path, started_at: float | None = None
) -> tuple[dict[str, Any] | None, list[dict[str, Any]], list[str]]:
    """What ``import ledger`` wrote in the process. Never fails the seal: problems become notes."""
    try:
        from ..runtime.ingest import collect_runtime_json
    except ImportError:
        return None, [], []
    try:
        data = collect_runtime_json(staging, store, started_at=started_at)
    except Exception as e:
        return None, [], [f"in-process data could not be ingested: {e}"]
    summaries = data.pop("metrics")
    return data, summaries, list(data["notes"])


def checkpoint_events(staging: Path) -> tuple[list[CheckpointEvent], list[str]]:
    """The run's ``checkpoints.jsonl`` events, and notes on lines that could not be kept.

    Keys the model does not know are dropped (a newer writer may add some), never the event.
    """
    path = staging / "checkpoints.jsonl"
    if not path.is_file():
        return [], []
    from ..records.run import CheckpointEvent

    events: list[CheckpointEvent] = []
    bad = 0
    known = CheckpointEvent.model_fields.keys()
    lines = path.read_bytes().split(b"\n")
    torn = lines.pop()  # what follows the last newline: empty, or an append cut by a kill
    for line in lines:
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if not isinstance(data, dict):
                raise ValueError("not an object")
            if "checkpoint" in data:  # the writer's name for the checkpoint id
                data["checkpoint_digest"] = data.pop("checkpoint")
            events.append(CheckpointEvent.model_validate({k: data[k] for k in known & data.keys()}))
        except ValueError:
            bad += 1
    notes = [f"checkpoints.jsonl: {bad} line(s) are not checkpoint events; left out"] if bad else []
    if torn.strip():
        notes.append("checkpoints.jsonl: the last line was cut short (the process was killed)")
    return events, notes


def contract_digest(contract: Contract | dict[str, Any], resolved_config_digest: str | None) -> str:
    """Identical code, config, data, environment and seeds give identical digests."""
    c = contract if isinstance(contract, dict) else contract.to_json()
    body = {
        "argv": c["argv"],
        "code": c["code_digest"],
        "config_files": [f.get("digest") or f.get("oid") for f in c["config_files"]],
        "resolved_config": resolved_config_digest,
        "inputs": [i.get("digest") for i in c["inputs"]],
        "environment": c["env_digest"],
        "seed_root": c["seed_root"],
    }
    if c["argv_b64"] is not None:  # arguments that differ only in non-UTF-8 bytes differ
        body["argv_b64"] = c["argv_b64"]
    return hash_bytes(canonical_json(body))
