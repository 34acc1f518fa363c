"""The training spec ``ledger check`` and ``ledger gate`` judge.

A spec is a Python entry point ``module:function`` (or a YAML file naming one under ``entry:``)
whose function returns a :class:`Spec` or a dict with the same keys. The YAML may also hold
settings per level or per gate check. Nothing here imports torch.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .._parse import LimitError, ParseError, load_yaml, read_bounded
from ..errors import UsageError

__all__ = ["LoadedSpec", "Spec", "load_spec"]

_MAX_BYTES = 2**20  # a spec is a few lines of YAML


@dataclass
class Spec:
    """What a check needs to build and train the model.

    ``batch(n)`` returns ``(inputs, target)`` for ``n`` samples, the same ones for the same
    ``n`` (seed inside it); ``inputs`` is a tensor or a tuple of tensors passed to the model.
    ``loss(output, target)`` returns a scalar; ``optimizer(params)`` an optimizer;
    ``scheduler(optimizer)``, optional, an LR scheduler stepped once per step.
    ``tokens_per_sample`` turns samples/s into tokens/s; ``sequence_axis`` and
    ``max_length`` describe sequence inputs for the gate's over-length poison input.
    ``decode(model, state, next_ids) -> (logits, state)``, optional, runs one decoding step
    (``state`` is None on the first) for the ``kv-cache`` check of a model that does not take
    ``use_cache``/``past_key_values`` as a transformers model does.
    """

    model: Callable[[], Any]
    batch: Callable[[int], tuple[Any, Any]]
    loss: Callable[[Any, Any], Any]
    optimizer: Callable[[Any], Any]
    scheduler: Callable[[Any], Any] | None = None
    batch_size: int = 8
    tokens_per_sample: int | None = None
    sequence_axis: int | None = None
    max_length: int | None = None
    decode: Callable[[Any, Any, Any], tuple[Any, Any]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class LoadedSpec:
    spec: Spec
    source: str  # as given
    entry: str  # module:function
    settings: dict[str, Any]  # per level / per gate check, from the YAML
    raw: bytes | None  # the YAML file's bytes, when the spec is one


def _import_entry(entry: str, base: Path) -> Spec:
    module_name, sep, func_name = entry.partition(":")
    if not sep or not module_name or not func_name:
        raise UsageError(
            f"spec entry {entry!r} is not module:function",
            hint="write it like mypkg.train:spec (a function returning ledger.check.Spec)",
        )
    if str(base) not in sys.path:
        sys.path.insert(0, str(base))
    try:
        module = importlib.import_module(module_name)
    except Exception as e:
        raise UsageError(
            f"cannot import {module_name!r} for the spec: {type(e).__name__}: {e}",
            hint=f"run from the folder that holds it, or set PYTHONPATH (searched: {base})",
        ) from None
    func = getattr(module, func_name, None)
    if not callable(func):
        raise UsageError(f"{module_name} has no function {func_name!r}")
    try:
        value = func()
    except Exception as e:
        raise UsageError(f"the spec function {entry} raised {type(e).__name__}: {e}") from None
    if isinstance(value, Spec):
        return value
    if isinstance(value, dict):
        known = {f.name for f in fields(Spec)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise UsageError(
                f"the spec from {entry} has unknown keys {unknown}",
                hint=f"known keys: {sorted(known)}",
            )
        missing = [k for k in ("model", "batch", "loss", "optimizer") if k not in value]
        if missing:
            raise UsageError(f"the spec from {entry} lacks {missing}")
        return Spec(**value)
    raise UsageError(
        f"the spec function {entry} returned {type(value).__name__}, not a Spec or dict"
    )


def load_spec(source: str) -> LoadedSpec:
    """``module:function``, or a YAML file with ``entry: module:function`` and settings."""
    path = Path(source)
    if source.endswith((".yaml", ".yml")) or path.is_file():
        try:
            raw = read_bounded(path, _MAX_BYTES)
            data = load_yaml(raw.decode("utf-8"))
        except OSError as e:
            raise UsageError(f"cannot read spec {source}: {e.strerror or e}") from None
        except UnicodeDecodeError as e:
            raise UsageError(f"spec {source} is not UTF-8 text (byte {e.start})") from None
        except LimitError as e:
            raise UsageError(
                f"spec {source}{e.where}: refused: {e.message}",
                hint="a spec names an entry point and a few settings per level",
            ) from None
        except ParseError as e:
            raise UsageError(f"spec {source}{e.where} is not valid YAML: {e.message}") from None
        if not isinstance(data, dict) or not isinstance(data.get("entry"), str):
            raise UsageError(
                f"spec {source} has no 'entry: module:function'",
                hint="see docs/how-to/verify-and-gate.md for the spec format",
            )
        base = (path.parent / str(data.get("path", "."))).resolve()
        settings = {k: v for k, v in data.items() if k not in ("entry", "path")}
        for key, value in settings.items():
            if not isinstance(value, dict):
                raise UsageError(f"spec {source}: '{key}' must be a mapping of settings")
        spec = _import_entry(data["entry"], base)
        return LoadedSpec(spec, source, data["entry"], settings, raw)
    spec = _import_entry(source, Path.cwd())
    return LoadedSpec(spec, source, source, {}, None)
