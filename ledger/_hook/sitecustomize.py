"""ledger's startup hook for recorded processes (``ledger record`` puts this directory first on
the child's PYTHONPATH; Python's ``site`` imports it at start-up).

It captures the resolved configuration without a change to the training script:

- every top-level ``ArgumentParser.parse_args``-family call writes the namespace (defaults
  included), the parser's prog and the arguments parsed to
  ``$LEDGER_RUN_DIR/config/argparse-<pid>-<n>.json``;
- every Hydra task function call writes the config it receives to ``hydra-<pid>-<n>.json``;
  in a multirun (``-m``) each job also writes ``hydrajob-<pid>-<n>.json`` (its number, overrides,
  output dir, start and end times, status) and tees what it prints to ``hydrajob-<pid>-<n>.out``
  and ``.err``, from which the recorder makes one run per job (``ledger/sweeps.py``);
- the plain module globals of ``__main__`` (at exit and at the first checkpoint save), absl
  flags, click/typer parameters, jsonargparse namespaces and Fire's call arguments, through
  ``ledger/capture/script_hook.py``.

Rules it keeps: it imports nothing heavy at start-up (argparse and Hydra are patched when the
program itself imports them), it never raises into the program (a failed capture leaves a
one-line ``.error`` note instead), and it runs the ``sitecustomize`` this one shadows.
It must not import ``ledger``: the child's Python may not have it installed.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from typing import Any

_HOOK_DIR = os.path.dirname(os.path.abspath(__file__))
_RUN_DIR = os.environ.get("LEDGER_RUN_DIR", "")
_STATE = {"depth": 0, "seq": 0}
_ARGPARSE_METHODS = (
    "parse_args",
    "parse_known_args",
    "parse_intermixed_args",
    "parse_known_intermixed_args",
)


# --- writing captures --------------------------------------------------------------------------


def _load(name: str, filename: str) -> Any:
    """A module of ``ledger/capture`` loaded by file path, once (the hook imports no ledger)."""
    mod = sys.modules.get(name)
    if mod is None:
        import importlib.util

        path = os.path.join(os.path.dirname(_HOOK_DIR), "capture", filename)
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return mod


def _redactor() -> Any:
    """ledger's redaction rules (``ledger/capture/redact.py``)."""
    return _load("_ledger_redact", "redact.py")


def _script_hook() -> Any:
    """Script globals, absl and click capture (``ledger/capture/script_hook.py``)."""
    fresh = "_ledger_script_hook" not in sys.modules
    mod = _load("_ledger_script_hook", "script_hook.py")
    if fresh:
        mod.bind(emit=_emit, next_stem=_next_stem, note=_note, redactor=_redactor, state=_STATE)
    return mod


def _safe(value: Any, depth: int = 0) -> Any:
    """JSON-safe copy: paths, enums and other objects become strings."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return value
    if depth > 50:
        return "<too deep>"
    if isinstance(value, dict):
        return {str(k): _safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_safe(v, depth + 1) for v in value]
    name = getattr(value, "name", None)
    if hasattr(value, "read") and isinstance(name, str):  # argparse.FileType gives open files
        return name
    try:
        return str(value)
    except Exception:
        return f"<{type(value).__name__}>"


def _write(name: str, payload: dict[str, Any]) -> None:
    import json

    directory = os.path.join(_RUN_DIR, "config")
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f".{name}.tmp")
    with open(tmp, "wb") as f:
        f.write(_utf8(json.dumps(payload, allow_nan=False, ensure_ascii=False)))
    os.replace(tmp, os.path.join(directory, name))


def _utf8(text: str) -> bytes:
    """UTF-8 of ``text``; argv bytes that were not UTF-8 (surrogate escapes) become U+FFFD:
    the run's contract keeps the exact bytes of the command line."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate that is no escaped byte
        raw = text.encode("utf-8", "replace")
    return raw.decode("utf-8", "replace").encode("utf-8")


def _note(stem: str, exc: BaseException) -> None:
    try:
        text = f"{type(exc).__name__}: {exc}"
        try:
            text = _redactor().redact_text(text)
        except Exception:
            text = type(exc).__name__
        _write_text(f"{stem}.error", text.replace("\n", " ")[:300] + "\n")
    except Exception:
        pass


def _write_text(name: str, text: str) -> None:
    directory = os.path.join(_RUN_DIR, "config")
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name), "wb") as f:
        f.write(_utf8(text))


def _next_stem(kind: str) -> str:
    _STATE["seq"] += 1
    return f"{kind}-{os.getpid()}-{_STATE['seq']}"


def _emit(stem: str, payload: dict[str, Any]) -> None:
    import time

    payload.update(pid=os.getpid(), seq=_STATE["seq"], time=time.time())
    _write(stem + ".json", payload)


# --- argparse ----------------------------------------------------------------------------------


def _capture_argparse(method: str, parser: Any, argv: list[Any], result: Any) -> None:
    stem = _next_stem("argparse")
    try:
        ns, unknown = result if isinstance(result, tuple) else (result, [])
        try:
            values = dict(vars(ns))
        except TypeError:
            values = {}
        try:
            red = _redactor()
            redact_json, redact_argv = red.redact_json, red.redact_argv
        except Exception:  # the recorder redacts again when it collects

            def redact_json(v: Any) -> Any:
                return v

            def redact_argv(v: list[str]) -> list[str]:
                return v

        _emit(
            stem,
            {
                "prog": str(getattr(parser, "prog", "")),
                "argv": redact_argv([str(a) for a in argv]),
                "namespace": redact_json(_safe(values)),
                "unknown": redact_argv([str(a) for a in unknown]),
                "method": method,
                "script": str(sys.argv[0]) if sys.argv else "",
            },
        )
    except Exception as exc:
        _note(stem, exc)


def _wrap_parse(method: str, orig: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _STATE["depth"]:  # a subparser, or parse_args calling parse_known_args
            return orig(self, *args, **kwargs)
        argv: list[Any] | None = None
        try:
            given = args[0] if args else kwargs.get("args")
            if given is None:
                argv = list(sys.argv[1:])
            else:  # a generator would be consumed by the parser: pass a list on
                argv = list(given)
                if args:
                    args = (argv, *args[1:])
                else:
                    kwargs["args"] = argv
        except Exception:
            argv = None
        _STATE["depth"] += 1
        try:
            result = orig(self, *args, **kwargs)
        finally:
            _STATE["depth"] -= 1
        if argv is not None:
            _capture_argparse(method, self, argv, result)
        return result

    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        if hasattr(orig, attr):
            setattr(wrapper, attr, getattr(orig, attr))
    wrapper.__wrapped__ = orig  # type: ignore[attr-defined]
    return wrapper


def _patch_argparse(module: Any) -> None:
    cls = module.ArgumentParser
    if cls.__dict__.get("_ledger_patched"):
        return
    for method in _ARGPARSE_METHODS:
        orig = cls.__dict__.get(method)
        if orig is not None:
            setattr(cls, method, _wrap_parse(method, orig))
    cls._ledger_patched = True


# --- Hydra -------------------------------------------------------------------------------------


def _capture_hydra(cfg: Any, full_config: Any) -> None:
    """Write the config capture; then ``_STATE["seq"]`` is its number (the job links to it)."""
    stem = _next_stem("hydra")
    try:
        from omegaconf import OmegaConf

        try:
            container, resolved = OmegaConf.to_container(cfg, resolve=True), True
        except Exception:
            container, resolved = OmegaConf.to_container(cfg, resolve=False), False
        overrides: list[str] = []
        output_dir = ""
        try:
            task_overrides: Any = OmegaConf.to_container(full_config.hydra.overrides.task)
            overrides = [str(o) for o in task_overrides]
            output_dir = str(full_config.hydra.runtime.output_dir)
        except Exception:
            pass
        try:
            red = _redactor()
            container, overrides = red.redact_json(_safe(container)), red.redact_argv(overrides)
        except Exception:
            container = _safe(container)
        _emit(
            stem,
            {
                "config": container,
                "resolved": resolved,
                "overrides": overrides,
                "output_dir": output_dir,
            },
        )
    except Exception as exc:
        _note(stem, exc)


class _Tee:
    """A text stream that also writes to a file: one multirun job's own output."""

    def __init__(self, stream: Any, path: str) -> None:
        self._stream = stream
        self._file = open(path, "a", encoding="utf-8", errors="replace")  # noqa: SIM115

    def write(self, text: str) -> Any:
        written = self._stream.write(text)  # the program's stream first, as it was
        with contextlib.suppress(Exception):
            self._file.write(text)
            self._file.flush()
        return written

    def flush(self) -> None:
        self._stream.flush()

    def close_file(self) -> None:
        with contextlib.suppress(Exception):
            self._file.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _hydra_job_start(full_config: Any) -> dict[str, Any] | None:
    """In a multirun, note the job and tee its output; None otherwise (or if that fails)."""
    import time

    try:
        hc = full_config.hydra
        if not str(hc.mode).endswith("MULTIRUN"):
            return None
        from omegaconf import OmegaConf

        stem = _next_stem("hydrajob")
        job: dict[str, Any] = {
            "stem": stem,
            "num": int(hc.job.num),
            "pid": os.getpid(),
            "config_seq": _STATE["seq"] - 1,  # the capture written just before
            "overrides": [str(o) for o in OmegaConf.to_container(hc.overrides.task)],  # type: ignore[union-attr]
            "output_dir": str(hc.runtime.output_dir),
            "sweep_dir": str(hc.sweep.dir),
            "started": time.time(),
            # The job's bounds on the monotonic clock too: a metric point's time is its
            # process's monotonic offset, and the wall clock can be stepped or slewed meanwhile.
            "started_mono": time.monotonic(),
            "status": "running",
        }
        with contextlib.suppress(Exception):
            job["overrides"] = _redactor().redact_argv(job["overrides"])
        directory = os.path.join(_RUN_DIR, "config")
        os.makedirs(directory, exist_ok=True)
        _write(stem + ".json", job)
        tees = []
        for name, ext in (("stdout", "out"), ("stderr", "err")):
            tee = _Tee(getattr(sys, name), os.path.join(directory, f"{stem}.{ext}"))
            setattr(sys, name, tee)
            tees.append((name, tee))
        job["_tees"] = tees
        return job
    except Exception as exc:
        _note("hydrajob", exc)
        return None


def _hydra_job_end(job: dict[str, Any], status: str, error: str) -> None:
    import time

    try:
        for name, tee in job.pop("_tees", []):
            if getattr(sys, name) is tee:
                setattr(sys, name, tee._stream)
            tee.close_file()
        try:
            error = _redactor().redact_text(error)
        except Exception:
            error = error.split(":", 1)[0]
        job.update(
            ended=time.time(),
            ended_mono=time.monotonic(),
            status=status,
            error=error.replace("\n", " ")[:500],
        )
        _write(job["stem"] + ".json", job)
    except Exception as exc:
        _note(job.get("stem", "hydrajob"), exc)


def _patch_hydra(module: Any) -> None:
    orig = module.run_job
    if getattr(orig, "_ledger_patched", False):
        return

    # Not named run_job: Hydra trims tracebacks up to the first frame of that name.
    def _ledger_run_job(*args: Any, **kwargs: Any) -> Any:
        config = kwargs.get("config", args[1] if len(args) > 1 else None)
        task = kwargs.get("task_function", args[0] if args else None)
        if callable(task):

            def _task(cfg: Any) -> Any:
                _capture_hydra(cfg, config)
                job = _hydra_job_start(config)
                if job is None:
                    return task(cfg)
                status, error = "interrupted", ""
                try:
                    result = task(cfg)
                    status = "succeeded"
                    return result
                except SystemExit as exc:
                    status = "succeeded" if exc.code in (0, None) else "failed"
                    error = "" if status == "succeeded" else f"SystemExit: {exc.code}"
                    raise
                except Exception as exc:
                    status, error = "failed", f"{type(exc).__name__}: {exc}"
                    raise
                finally:
                    _hydra_job_end(job, status, error)

            if "task_function" in kwargs:
                kwargs["task_function"] = _task
            else:
                args = (_task, *args[1:])
        return orig(*args, **kwargs)

    _ledger_run_job._ledger_patched = True  # type: ignore[attr-defined]
    module.run_job = _ledger_run_job


# --- lazy patching on import -------------------------------------------------------------------

_PATCHES: dict[str, Callable[[Any], None]] = {
    "argparse": _patch_argparse,
    "hydra.core.utils": _patch_hydra,
    # ledger/capture/script_hook.py: first checkpoint save, absl flags, click/typer commands
    "torch.serialization": lambda m: _script_hook().patch_torch_save(m),
    "ledger.torch.checkpoint.save": lambda m: _script_hook().patch_ledger_checkpoint(m),
    "absl.flags._flagvalues": lambda m: _script_hook().patch_absl(m),
    "click.core": lambda m: _script_hook().patch_click(m),
    "typer._click.core": lambda m: _script_hook().patch_click(m),  # typer's own copy of click
    "jsonargparse._core": lambda m: _script_hook().patch_jsonargparse(m),
    "fire.core": lambda m: _script_hook().patch_fire(m),
}


def _at_exit() -> None:
    """The script's module globals as the process ends (``script_hook.on_exit``); not in a
    multiprocessing child, whose ``__main__`` is the parent's script run as ``__mp_main__``."""
    if getattr(sys.modules.get("__main__"), "__name__", "") != "__main__":
        return
    try:
        _script_hook().on_exit()
    except Exception as exc:
        _note(f"script-{os.getpid()}", exc)


class _PatchingLoader:
    """Runs the real loader, then the patch; the module keeps the real loader afterwards."""

    def __init__(self, loader: Any, patch: Callable[[Any], None]) -> None:
        self._loader = loader
        self._patch = patch

    def create_module(self, spec: Any) -> Any:
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        module.__loader__ = self._loader
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self._loader
        try:
            self._patch(module)
        except Exception as exc:
            _note(f"patch-{module.__name__}-{os.getpid()}", exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _PostImportFinder:
    """A meta path finder that only answers for the modules in ``_PATCHES``: it asks the
    finders after it for the real spec and wraps its loader."""

    def __init__(self) -> None:
        self._busy: set[str] = set()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        patch = _PATCHES.get(name)
        if patch is None or name in self._busy:
            return None
        self._busy.add(name)
        try:
            for finder in sys.meta_path:
                find = getattr(finder, "find_spec", None)
                if finder is self or find is None:
                    continue
                spec = find(name, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            self._busy.discard(name)
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _PatchingLoader(spec.loader, patch)
        return spec


def _install() -> None:
    import atexit

    atexit.register(_at_exit)  # first registered, so it runs last: after the program's own
    for name, patch in _PATCHES.items():
        if name in sys.modules:
            try:
                patch(sys.modules[name])
            except Exception as exc:
                _note(f"patch-{name}-{os.getpid()}", exc)
    sys.meta_path.insert(0, _PostImportFinder())


# --- chaining to the sitecustomize this one shadows --------------------------------------------


def _chain() -> None:
    from importlib.machinery import PathFinder

    ours = {_HOOK_DIR, os.path.abspath(os.environ.get("LEDGER_HOOK_DIR") or _HOOK_DIR)}
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") not in ours]
    spec = PathFinder.find_spec("sitecustomize", sys.path)
    if spec is None or spec.loader is None or spec.origin == os.path.abspath(__file__):
        return
    import importlib.util

    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)  # its errors surface as site.py reports them, as before


def _install_reads() -> None:
    """Record the files this process reads (``reads.py`` beside this file)."""
    import importlib.util

    path = os.path.join(_HOOK_DIR, "reads.py")
    spec = importlib.util.spec_from_file_location("_ledger_reads", path)
    if spec is None or spec.loader is None:
        raise ImportError(path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["_ledger_reads"] = mod
    spec.loader.exec_module(mod)
    mod.install(_RUN_DIR, _HOOK_DIR)


if _RUN_DIR:
    try:
        _install()
    except Exception as _exc:
        _note(f"install-{os.getpid()}", _exc)
    try:
        _install_reads()
    except Exception as _exc:
        _note(f"reads-{os.getpid()}", _exc)
_chain()
