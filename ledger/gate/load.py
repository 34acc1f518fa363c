"""Load the checkpoint a gate judges into the spec's model: a ledger checkpoint (id, ref, run
id), a safetensors / torch weights file, or such a file a run recorded as an output
(``RUN:out/model.pt``), with the digest the gate record is bound to.

Weights files are never unpickled: ``.safetensors`` holds tensors only, and any other file is
read with ``torch.load(weights_only=True)``, which refuses every object but tensors and plain
containers, so a file from a run (or a stranger) cannot run code when it is gated."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..store import Store

__all__ = ["LoadedWeights", "load_weights"]


@dataclass
class LoadedWeights:
    digest: str
    source: str  # "ledger" | "safetensors" | "torch"
    run_id: str | None = None
    step: int | None = None


def _state_dict(value: Any, key: str) -> dict[str, Any]:
    if isinstance(value, dict) and key in value and isinstance(value[key], dict):
        value = value[key]
    if not isinstance(value, dict):
        raise UsageError(f"the weights file holds a {type(value).__name__}, not a state dict")
    return value


def _read_weights(data: bytes, name: str, target: str, state_key: str) -> tuple[Any, str]:
    """(state dict, source) from a weights file's bytes; never unpickles objects."""
    if name.endswith(".safetensors"):
        from safetensors.torch import load

        try:
            return load(data), "safetensors"
        except Exception as e:
            raise UsageError(f"cannot read weights {target}: {type(e).__name__}: {e}") from None
    import io

    import torch

    try:
        value = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as e:
        raise UsageError(
            f"cannot read weights {target}: {type(e).__name__}: {str(e).splitlines()[0][:300]}",
            hint="the file is read with torch.load(weights_only=True), which loads tensors "
            "and plain containers only (never pickled objects): save model.state_dict(), or "
            "use .safetensors",
        ) from None
    return _state_dict(value, state_key), "torch"


def _run_output(store: Store, target: str) -> tuple[str, bytes, str, str] | None:
    """(run id, bytes, digest, path) of ``RUN:PATH``, a file the run recorded as an output;
    None when ``target`` is not of that form (or names no run)."""
    run_text, sep, path = target.partition(":")
    if not sep or not run_text or not path:
        return None
    from ..run.find import backed_record, resolve_run
    from ..run.outputs import find_output

    try:
        run_id = resolve_run(store, run_text)
    except UsageError:
        return None
    rec = store.get_json(backed_record(store, run_id))  # re-hashed on read
    out = find_output(store, rec, path)  # UsageError naming the run's output files
    return run_id, store.objects.get_bytes(out.oid), out.oid, out.path


def load_weights(model: Any, target: str, store: Store | None, state_key: str) -> LoadedWeights:
    """Load ``target`` into ``model`` (strict: every key must match)."""
    from .._hashing import hash_file

    path = Path(target)
    if path.is_file():
        digest = hash_file(path)
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            sd: dict[str, Any] = load_file(str(path))
            source = "safetensors"
        else:
            sd, source = _read_weights(path.read_bytes(), path.name, target, state_key)
        _strict_load(model, sd, target)
        return LoadedWeights(digest, source)
    output = None if store is None else _run_output(store, target)
    if output is not None:
        run_id, data, digest, name = output
        sd, source = _read_weights(data, name, target, state_key)
        _strict_load(model, sd, target)
        # The object id is the BLAKE3 of the file's bytes: the same digest as the file gated
        # from disk, and the gate is bound to the run that wrote it.
        return LoadedWeights(digest, source, run_id=run_id)
    if store is None:
        raise UsageError(
            f"{target!r} is not a file, and there is no ledger to look it up in",
            hint="give a weights file, or a checkpoint id, ref or run id with --ledger",
        )
    from ..torch.checkpoint.common import read_checkpoint, resolve_checkpoint
    from ..torch.checkpoint.load import load_checkpoint

    try:
        oid = resolve_checkpoint(store, target, None)
    except UsageError:
        # A run name or short id: that run's latest checkpoint.
        from ..run.find import resolve_run

        try:
            run_id = resolve_run(store, target)
        except UsageError:
            raise UsageError(
                f"{target!r} is no weights file, checkpoint, ref or run",
                hint="give a .safetensors/.pt file, a checkpoint id, a ref, a run "
                "(id, short id or name; its latest checkpoint), or RUN:PATH, a weights file "
                "the run recorded as an output (e.g. RUN:out/model.pt)",
            ) from None
        oid = resolve_checkpoint(store, "latest", run_id)
    rec = read_checkpoint(store, oid)
    try:
        load_checkpoint(oid, state={state_key: model}, store=store, mode="warm-start")
    except UsageError:
        raise
    except Exception as e:
        raise UsageError(
            f"checkpoint {oid[:15]}… does not load into the spec's model under "
            f"'{state_key}': {type(e).__name__}: {str(e)[:300]}",
            hint="set checkpoint: {state_key: ...} in the gate spec to the model's key",
        ) from None
    return LoadedWeights(oid, "ledger", rec.run_id, rec.step)


def _strict_load(model: Any, sd: dict[str, Any], target: str) -> None:
    try:
        model.load_state_dict(sd, strict=True)
    except Exception as e:
        raise UsageError(
            f"weights {target} do not fit the spec's model: {str(e).splitlines()[0][:300]}"
        ) from None
