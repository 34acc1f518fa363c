"""Capture and restore the actual states of every RNG a training process uses, as JSON.

Covered: Python ``random``, NumPy's global legacy generator, registered
``numpy.random.Generator`` objects, torch CPU, torch CUDA (all devices) and registered
``torch.Generator`` objects. torch and numpy are only touched if already imported, so capturing
in a process that never used torch costs nothing and does not import it.
"""

from __future__ import annotations

import base64
import random
import sys
import threading
from collections.abc import Callable
from typing import Any

from ..records.rng import PythonRandomState, RngState

__all__ = ["capture_rng", "register_generator", "registered_generators", "restore_rng"]

_lock = threading.Lock()
_numpy_generators: dict[str, Any] = {}
_torch_generators: dict[str, Any] = {}


def register_generator(name: str, generator: Any) -> Any:
    """Include a ``numpy.random.Generator`` or ``torch.Generator`` in captured states."""
    kind = type(generator).__module__ + "." + type(generator).__qualname__
    with _lock:
        if kind.startswith("numpy.random"):
            _numpy_generators[name] = generator
        elif kind.startswith("torch"):
            _torch_generators[name] = generator
        else:
            raise TypeError(f"cannot register {kind}: not a numpy or torch generator")
    return generator


def registered_generators() -> dict[str, Any]:
    with _lock:
        return {**_numpy_generators, **_torch_generators}


def _jsonable(value: Any) -> Any:
    """numpy arrays/ints inside bit_generator states become plain lists/ints."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _b64(tensor: Any) -> str:
    return base64.b64encode(tensor.numpy().tobytes()).decode("ascii")


def _unb64(text: str) -> Any:
    import torch

    return torch.frombuffer(bytearray(base64.b64decode(text)), dtype=torch.uint8)


def capture_rng(*, cuda: bool = True) -> RngState:
    version, internal, gauss = random.getstate()
    py = PythonRandomState(version=version, internal=list(internal), gauss_next=gauss)
    np_global = None
    np_gens: dict[str, dict[str, Any]] = {}
    if "numpy" in sys.modules:
        import numpy as np

        np_global = _jsonable(np.random.get_state(legacy=False))
        with _lock:
            for name, gen in _numpy_generators.items():
                np_gens[name] = _jsonable(gen.bit_generator.state)
    torch_cpu = None
    torch_cuda: list[str] = []
    torch_gens: dict[str, str] = {}
    if "torch" in sys.modules:
        import torch

        torch_cpu = _b64(torch.get_rng_state())
        if cuda and torch.cuda.is_available() and torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
            torch_cuda = [_b64(s.cpu()) for s in torch.cuda.get_rng_state_all()]
        with _lock:
            for name, tgen in _torch_generators.items():
                torch_gens[name] = _b64(tgen.get_state())
    return RngState(
        python=py,
        numpy_global=np_global,
        numpy_generators=np_gens,
        torch_cpu=torch_cpu,
        torch_cuda=torch_cuda,
        torch_generators=torch_gens,
    )


def _numpy_state(state: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    out = dict(state)
    inner = out.get("state")
    if isinstance(inner, dict) and isinstance(inner.get("key"), list):
        inner = dict(inner)
        inner["key"] = np.asarray(inner["key"], dtype=np.uint32)  # MT19937 key array
        out["state"] = inner
    return out


def _restore_registered(
    kind: str,
    registry: dict[str, Any],
    states: dict[str, Any],
    apply: Callable[[Any, Any], None],
    strict: bool,
) -> list[str]:
    """Put each captured state back into the generator registered under its name."""
    done = []
    with _lock:
        for name, st in states.items():
            gen = registry.get(name)
            if gen is None:
                if strict:
                    raise KeyError(f"{kind} generator {name!r} is not registered")
                continue
            apply(gen, st)
            done.append(f"{kind}:{name}")
    return done


def restore_rng(state: RngState, *, strict: bool = True) -> list[str]:
    """Put every captured state back. Returns what was restored. With ``strict``, a captured
    generator that is no longer registered is an error, not a silent skip."""
    restored: list[str] = []
    if state.python is not None:
        random.setstate(
            (state.python.version, tuple(state.python.internal), state.python.gauss_next)
        )
        restored.append("python")
    if state.numpy_global is not None or state.numpy_generators:
        import numpy as np

        if state.numpy_global is not None:
            np.random.set_state(_numpy_state(state.numpy_global))
            restored.append("numpy")
        restored += _restore_registered(
            "numpy",
            _numpy_generators,
            state.numpy_generators,
            lambda gen, st: setattr(gen.bit_generator, "state", _numpy_state(st)),
            strict,
        )
    if state.torch_cpu is not None or state.torch_cuda or state.torch_generators:
        import torch

        if state.torch_cpu is not None:
            torch.set_rng_state(_unb64(state.torch_cpu))
            restored.append("torch")
        if state.torch_cuda:
            if torch.cuda.is_available() and torch.cuda.device_count() >= len(state.torch_cuda):
                torch.cuda.set_rng_state_all([_unb64(s) for s in state.torch_cuda])
                restored.append("torch.cuda")
            elif strict:
                raise RuntimeError(
                    f"captured {len(state.torch_cuda)} CUDA RNG states but "
                    f"{torch.cuda.device_count() if torch.cuda.is_available() else 0} devices "
                    "are visible"
                )
        restored += _restore_registered(
            "torch",
            _torch_generators,
            state.torch_generators,
            lambda gen, blob: gen.set_state(_unb64(blob)),
            strict,
        )
    return restored
