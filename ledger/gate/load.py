"""Load the checkpoint a gate judges into the spec's model: a ledger checkpoint (id, ref, run
id) or a safetensors / torch weights file, with the digest the gate record is bound to."""

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
            import torch

            try:
                sd = _state_dict(torch.load(path, map_location="cpu", weights_only=True), state_key)
            except UsageError:
                raise
            except Exception as e:
                raise UsageError(f"cannot read weights {target}: {type(e).__name__}: {e}") from None
            source = "torch"
        _strict_load(model, sd, target)
        return LoadedWeights(digest, source)
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
                hint="give a .safetensors/.pt file, a checkpoint id, a ref, or a run "
                "(id, short id or name; its latest checkpoint)",
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
