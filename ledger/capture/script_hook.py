"""Config of programs that no argparse parser or Hydra app configures, captured inside the
recorded process: module globals of ``__main__`` (nanoGPT-style scripts), absl flags, the
parameters of the click/typer command invoked, jsonargparse namespaces and the arguments Fire
binds to each call.

Loaded by file path from ``ledger/_hook/sitecustomize.py`` (as ``_ledger_script_hook``), which
hands it its writers (``bind``); like the hook it imports only the standard library, never
``ledger``, and never raises into the program. It writes to ``$LEDGER_RUN_DIR/config/``:

- ``script-<pid>-<n>.json``: the plain module globals of ``__main__`` when the process ends
  (``atexit``) and at its first checkpoint save (``torch.save`` or ledger's
  ``save_checkpoint``), so a run killed after that still has them;
- ``parser-<pid>-<n>.json``: absl's flags after a successful parse of ``FLAGS``, the
  parameters of each click/typer command as it is invoked, the namespace of an outermost
  jsonargparse parse, and the arguments of each call Fire makes.

Which globals count: plain values only (None, bools, numbers, strings, small lists and dicts of
those; dataclass instances, OmegaConf objects and ml_collections ConfigDicts as their plain
fields), not private ``_x``
names; and, when the script's source can be read, only names the script binds at module level
outside loops: a name also bound inside a loop, or declared ``global`` in a function, is run
state (``iter_num``, ``t0``), and a name the script never binds came from code it ``exec``-ed
(a configurator's loop variables). Those are listed in ``left_out`` with the reason.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

__all__ = [
    "bind",
    "convert",
    "module_bindings",
    "on_checkpoint",
    "on_exit",
    "patch_absl",
    "patch_click",
    "patch_fire",
    "patch_jsonargparse",
    "patch_ledger_checkpoint",
    "patch_torch_save",
]

MAX_ITEMS = 256  # a list or dict longer than this is data, not config
MAX_STR = 4096
MAX_DEPTH = 6
MAX_SOURCE = 2 * 2**20  # a __main__ file larger than this is not parsed
MAX_LEFT_OUT = 200
BUDGET = 20_000  # items (and 64-character pieces of strings) one value may hold at most

_API: dict[str, Any] = {}
_STATE: dict[str, Any] = {"checkpoint": False, "bindings": None, "budget": BUDGET}
_SKIP = object()


def bind(**api: Any) -> None:
    """The hook's writers: ``emit(stem, payload)``, ``next_stem(kind)``, ``note(stem, exc)``,
    ``redactor()`` and ``state`` (its argparse depth counter)."""
    _API.update(api)


# --- values ------------------------------------------------------------------------------------


def _typed(value: Any) -> tuple[Any, str] | None:
    """A config object of a known kind as a plain container, with its kind; None otherwise.
    Libraries are looked up in ``sys.modules``: one the program did not import is not there."""
    cls = type(value)
    omegaconf = sys.modules.get("omegaconf")
    if omegaconf is not None and isinstance(value, (omegaconf.DictConfig, omegaconf.ListConfig)):
        try:
            return omegaconf.OmegaConf.to_container(value, resolve=True), "omegaconf"
        except Exception:
            return omegaconf.OmegaConf.to_container(value, resolve=False), "omegaconf"
    if cls.__module__.startswith("ml_collections.") and callable(getattr(value, "to_dict", None)):
        return value.to_dict(), "ml_collections"  # ConfigDict, FrozenConfigDict
    fields = getattr(cls, "__dataclass_fields__", None)
    if isinstance(fields, dict) and not isinstance(value, type):
        out = {}
        for name in fields:
            got = convert(getattr(value, name, None), 1)
            if got is not _SKIP:
                out[name] = got
        return out, "dataclass"
    return None


def convert(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON when it is a plain config value; ``_SKIP`` otherwise (modules,
    functions, tensors, open files, long lists: anything that is not a setting)."""
    cls = type(value)
    if value is None or cls in (bool, int, str):
        if cls is str:
            _STATE["budget"] -= len(value) // 64
            if len(value) > MAX_STR:
                return _SKIP
        return value
    if isinstance(value, float):  # numpy's float64 too
        value = float(value)
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return value
    if depth >= MAX_DEPTH or _STATE["budget"] < 0:
        return _SKIP
    if cls in (list, tuple):
        _STATE["budget"] -= len(value)
        if len(value) > MAX_ITEMS:
            return _SKIP
        items = [convert(v, depth + 1) for v in value]
        return _SKIP if any(v is _SKIP for v in items) else items
    if cls is dict:
        _STATE["budget"] -= len(value)
        if len(value) > MAX_ITEMS or not all(type(k) is str for k in value):
            return _SKIP
        out = {k: convert(v, depth + 1) for k, v in value.items()}
        return _SKIP if any(v is _SKIP for v in out.values()) else out
    typed = _typed(value)
    if typed is not None:
        return _loose(typed[0], depth)
    return _SKIP


def _loose(value: Any, depth: int) -> Any:
    """A typed config's container: its leaves kept where plain, else as their text; parts
    past 20 levels or the snapshot's budget are left out."""
    if depth > 20 or _STATE["budget"] < 0:
        return _SKIP
    if isinstance(value, dict):
        _STATE["budget"] -= len(value)
        pairs = ((str(k), _loose(v, depth + 1)) for k, v in value.items())
        return {k: v for k, v in pairs if v is not _SKIP}
    if isinstance(value, (list, tuple)):
        _STATE["budget"] -= len(value)
        return [v for v in (_loose(v, depth + 1) for v in value) if v is not _SKIP]
    got = convert(value, depth)
    if got is _SKIP:
        try:
            return str(value)[:MAX_STR]
        except Exception:
            return f"<{type(value).__name__}>"
    return got


# --- what the script binds ---------------------------------------------------------------------


def module_bindings(source: str) -> tuple[set[str], set[str], bool]:
    """Names a module binds at top level outside loops, names it binds inside a loop (or that
    a function declares ``global``), and whether it has a ``from x import *``."""
    import ast

    tree = ast.parse(source)
    once: set[str] = set()
    state: set[str] = set()
    star = False

    def bound(node: ast.AST) -> set[str]:
        """Names a statement binds, not looking into nested scopes."""
        out: set[str] = set()
        todo = [node]
        while todo:
            n = todo.pop()
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.add(n.id)
            elif isinstance(n, ast.alias):
                out.add((n.asname or n.name).split(".")[0])
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(n.name)
                continue
            elif isinstance(n, (ast.Lambda, ast.comprehension, ast.GeneratorExp)):
                continue
            todo.extend(ast.iter_child_nodes(n))
        return out

    def visit(stmts: list[ast.stmt], in_loop: bool) -> None:
        nonlocal star
        for s in stmts:
            if isinstance(s, ast.ImportFrom) and any(a.name == "*" for a in s.names):
                star = True
                continue
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                (state if in_loop else once).add(s.name)
                continue
            loop = isinstance(s, (ast.For, ast.AsyncFor, ast.While))
            if isinstance(s, blocks):
                head: list[ast.AST] = []
                if isinstance(s, (ast.For, ast.AsyncFor)):
                    state.update(bound(s.target))
                elif isinstance(s, (ast.With, ast.AsyncWith)):
                    head = [i.optional_vars for i in s.items if i.optional_vars is not None]
                for h in head:
                    (state if in_loop else once).update(bound(h))
                for block in ("body", "orelse", "finalbody"):
                    visit(getattr(s, block, []), in_loop or loop)
                for handler in getattr(s, "handlers", []):
                    if handler.name:
                        (state if in_loop else once).add(handler.name)
                    visit(handler.body, in_loop)
                continue
            (state if in_loop else once).update(bound(s))

    blocks = tuple(
        getattr(ast, n)
        for n in ("If", "With", "AsyncWith", "Try", "TryStar", "For", "AsyncFor", "While")
        if hasattr(ast, n)
    )
    visit(tree.body, False)
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            state.update(node.names)
    return once - state, state, star


def _main_file(main: Any) -> str | None:
    """``__main__``'s source file (CPython deletes ``__main__.__file__`` when the script
    ends, before ``atexit``: its loader still has it)."""
    path = getattr(main, "__file__", None) or getattr(
        getattr(main, "__loader__", None), "path", None
    )
    return path if isinstance(path, str) else None


def _bindings(main: Any) -> tuple[set[str], set[str], bool] | None:
    """``module_bindings`` of ``__main__``'s source file, once per process; None when it has
    none that can be read (``python -c``, a zip app, a file too large or that does not parse)."""
    if _STATE["bindings"] is None:
        _STATE["bindings"] = False
        path = _main_file(main)
        try:
            if (
                isinstance(path, str)
                and path.endswith(".py")
                and os.path.getsize(path) <= MAX_SOURCE
            ):
                with open(path, encoding="utf-8") as f:
                    _STATE["bindings"] = module_bindings(f.read())
        except Exception:
            pass
    return _STATE["bindings"] or None


# --- snapshots of __main__ ---------------------------------------------------------------------


def _rank() -> int | None:
    text = os.environ.get("RANK", "")
    return int(text) if text.isdigit() else None


def _redacting() -> tuple[Any, Any]:
    try:
        red = _API["redactor"]()
        return red.redact_json, red.redact_argv
    except Exception:  # the recorder redacts again when it collects
        return (lambda v: v), (lambda v: v)


def _parsed_here() -> bool:
    """Whether a parser (argparse, Hydra, absl, click, typer) configured this process: its
    capture is in the run's config directory. Its other globals are then not config."""
    mark = f"-{os.getpid()}-"
    try:
        names = os.listdir(os.path.join(os.environ.get("LEDGER_RUN_DIR", ""), "config"))
    except OSError:
        return False
    return any(
        n.endswith(".json") and mark in n and n.startswith(("argparse-", "hydra-", "parser-"))
        for n in names
    )


def snapshot(when: str) -> None:
    """Write the plain globals of ``__main__`` as they stand now (``when``: exit, checkpoint).

    Cheap where there is nothing to keep: a process with no plain globals (``python -c``, a
    helper) or one a parser configured writes a few bytes, parsing no source and loading no
    redaction rules."""
    main = sys.modules.get("__main__")
    # A multiprocessing child runs the script as __mp_main__: its globals are the parent's.
    if main is None or getattr(main, "__name__", "") != "__main__" or "emit" not in _API:
        return
    stem = _API["next_stem"]("script")
    try:
        parsed = _parsed_here()
        candidates = []
        for name, value in list(vars(main).items()):
            if name.startswith("_") or isinstance(value, type) or callable(value):
                continue
            if type(value).__name__ == "module":
                continue
            kind = _typed(value)
            if parsed and kind is None:
                continue  # the recorder keeps only config objects of such a process
            candidates.append((name, value, kind))
        known = _bindings(main) if candidates and not parsed else None
        values: dict[str, Any] = {}
        typed: dict[str, str] = {}
        left_out: dict[str, str] = {}
        for name, value, kind in candidates:
            if known is not None:
                once, state, star = known
                if name in state:
                    left_out[name] = "bound in a loop or a function"
                    continue
                if name not in once and not star:
                    left_out[name] = "not bound by the script"
                    continue
            _STATE["budget"] = BUDGET
            got = convert(value) if kind is None else _loose(kind[0], 0)
            if _STATE["budget"] < 0:
                left_out[name] = "too large"
                continue
            if got is _SKIP:
                left_out[name] = "not a plain value"
                continue
            values[name] = got
            if kind is not None:
                typed[name] = kind[1]
        if values:
            redact_json, redact_argv = _redacting()
            values, argv = redact_json(values), redact_argv([str(a) for a in sys.argv[1:]])
        else:
            argv = []  # nothing an argument could have set: no need to keep them
        _API["emit"](
            stem,
            {
                "when": when,
                "values": values,
                "typed": typed,
                "left_out": dict(sorted(left_out.items())[:MAX_LEFT_OUT]),
                "argv": argv,
                "script": _main_file(main) or (sys.argv[0] if sys.argv else ""),
                "source": known is not None,
                "rank": _rank(),
            },
        )
    except Exception as exc:
        _API["note"](stem, exc)


def on_exit() -> None:
    snapshot("exit")


def on_checkpoint() -> None:
    """The first checkpoint save of the process: the globals a killed run keeps."""
    if not _STATE["checkpoint"]:
        _STATE["checkpoint"] = True
        snapshot("checkpoint")


def _first_call_snapshots(orig: Any) -> Any:
    def save(*args: Any, **kwargs: Any) -> Any:
        with contextlib.suppress(Exception):
            on_checkpoint()
        return orig(*args, **kwargs)

    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        if hasattr(orig, attr):
            setattr(save, attr, getattr(orig, attr))
    save.__wrapped__ = orig  # type: ignore[attr-defined]
    save._ledger_patched = True  # type: ignore[attr-defined]
    return save


def patch_torch_save(module: Any) -> None:
    """``torch.serialization`` imported: its ``save`` (``torch.save``) snapshots first."""
    if not getattr(module.save, "_ledger_patched", False):
        module.save = _first_call_snapshots(module.save)


def patch_ledger_checkpoint(module: Any) -> None:
    """``ledger.torch.checkpoint.save`` imported: ``save_checkpoint`` snapshots first."""
    if not getattr(module.save_checkpoint, "_ledger_patched", False):
        module.save_checkpoint = _first_call_snapshots(module.save_checkpoint)


# --- absl and click ----------------------------------------------------------------------------


def _emit_parser(parser: str, name: str, values: dict[str, Any], argv: list[Any]) -> None:
    stem = _API["next_stem"]("parser")
    try:
        redact_json, redact_argv = _redacting()
        plain = {}
        for k, v in values.items():
            _STATE["budget"] = BUDGET
            got = _loose(v, 0)
            if got is not _SKIP:
                plain[k] = got
        _API["emit"](
            stem,
            {
                "parser": parser,
                "name": name,
                "values": redact_json(plain),
                "argv": redact_argv([str(a) for a in argv]),
                "rank": _rank(),
            },
        )
    except Exception as exc:
        _API["note"](stem, exc)


def patch_absl(module: Any) -> None:
    """``absl.flags._flagvalues`` imported: a successful parse of a ``FlagValues`` (what
    ``app.run`` does to ``FLAGS``) writes the values of the flags the program defined (absl's
    own ``absl.*`` flags left out)."""
    cls = module.FlagValues
    if cls.__dict__.get("_ledger_patched"):
        return
    orig = cls.__call__

    def __call__(self: Any, argv: Any, *args: Any, **kwargs: Any) -> Any:
        result = orig(self, argv, *args, **kwargs)
        try:
            by_module = self.flags_by_module_dict()
            values = {
                f.name: f.value
                for mod, flags in by_module.items()
                if not str(mod).startswith("absl.")
                for f in flags
            }
            given = list(argv) if argv is not None else []
            _emit_parser("absl", str(given[0]) if given else "", values, given[1:])
        except Exception as exc:
            _API["note"](_API["next_stem"]("parser"), exc)
        return result

    cls.__call__ = __call__
    cls._ledger_patched = True


def patch_click(module: Any) -> None:
    """``click.core`` imported: each command invoked (a group's callback, then its
    subcommand's) writes its parameters, defaults included, before its callback runs. Typer
    commands are click commands."""
    cls = module.Command
    if cls.__dict__.get("_ledger_patched"):
        return
    orig = cls.invoke

    def invoke(self: Any, ctx: Any) -> Any:
        try:
            kind = "typer" if type(self).__module__.startswith("typer") else "click"
            args = list(getattr(ctx, "args", []) or [])
            _emit_parser(kind, str(ctx.command_path), dict(ctx.params), args)
        except Exception as exc:
            _API["note"](_API["next_stem"]("parser"), exc)
        return orig(self, ctx)

    invoke.__wrapped__ = orig  # type: ignore[attr-defined]
    cls.invoke = invoke
    cls._ledger_patched = True


# --- jsonargparse and fire ---------------------------------------------------------------------


def patch_jsonargparse(module: Any) -> None:
    """``jsonargparse._core`` imported: the namespace an outermost ``parse_args``,
    ``parse_object``, ``parse_env`` or ``parse_string`` of an ``ArgumentParser`` returns
    (LightningCLI's parser: subcommands and class arguments nested) writes its values."""
    cls = module.ArgumentParser
    if cls.__dict__.get("_ledger_patched"):
        return

    def wrap(method: str, orig: Any) -> Any:
        def parse(self: Any, *args: Any, **kwargs: Any) -> Any:
            _STATE["jsonargparse"] = _STATE.get("jsonargparse", 0) + 1
            try:
                result = orig(self, *args, **kwargs)
            finally:
                _STATE["jsonargparse"] -= 1
            if _STATE["jsonargparse"] == 0:
                try:
                    given = args[0] if args else kwargs.get("args", kwargs.get("cfg_obj"))
                    if method == "parse_args":
                        argv = sys.argv[1:] if given is None else list(given)
                    else:
                        argv = []
                    values = dict(result.as_dict() if hasattr(result, "as_dict") else vars(result))
                    values.pop("__path__", None)
                    _emit_parser("jsonargparse", str(getattr(self, "prog", "")), values, argv)
                except Exception as exc:
                    _API["note"](_API["next_stem"]("parser"), exc)
            return result

        parse.__wrapped__ = orig  # type: ignore[attr-defined]
        for attr in ("__name__", "__qualname__", "__doc__"):
            setattr(parse, attr, getattr(orig, attr, None))
        return parse

    for method in ("parse_args", "parse_object", "parse_env", "parse_string"):
        orig = cls.__dict__.get(method)
        if orig is not None:
            setattr(cls, method, wrap(method, orig))
    cls._ledger_patched = True


def patch_fire(module: Any) -> None:
    """``fire.core`` imported: each call Fire makes of the program's component (a function,
    a class's constructor, then its method) writes the arguments Fire parsed from the command
    line and binds to it, defaults included, before the call. Fire's own argparse parser of
    its flags (``-- --trace``) is not the program's config: the argparse capture skips it."""
    if getattr(module._MakeParseFn, "_ledger_patched", False):
        return
    orig = module._MakeParseFn

    def _MakeParseFn(fn: Any, metadata: Any) -> Any:
        parse = orig(fn, metadata)

        def _ParseFn(args: Any) -> Any:
            result = parse(args)
            try:
                import inspect

                (varargs, kwargs), consumed = result[0], result[1]
                bound = inspect.signature(fn).bind_partial(*varargs, **kwargs)
                bound.apply_defaults()
                values = {}
                for name, value in bound.arguments.items():
                    kind = bound.signature.parameters[name].kind
                    if kind is inspect.Parameter.VAR_KEYWORD:
                        values.update(value)
                    else:
                        values[name] = list(value) if isinstance(value, tuple) else value
                called = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "")
                _emit_parser("fire", str(called), values, list(consumed))
            except Exception as exc:
                _API["note"](_API["next_stem"]("parser"), exc)
            return result

        return _ParseFn

    _MakeParseFn._ledger_patched = True  # type: ignore[attr-defined]
    with contextlib.suppress(Exception):
        _quiet_fire_flags(module.parser)
    _MakeParseFn.__wrapped__ = orig  # type: ignore[attr-defined]
    module._MakeParseFn = _MakeParseFn


def _quiet_fire_flags(parser_module: Any) -> None:
    """Fire's ``parser.CreateParser`` returns a parser whose parses count as nested ones for
    the argparse capture (the hook's depth counter), so they write nothing."""
    orig = parser_module.CreateParser

    def CreateParser(*args: Any, **kwargs: Any) -> Any:
        made = orig(*args, **kwargs)
        try:
            bound = made.parse_known_args

            def parse_known_args(*a: Any, **k: Any) -> Any:
                state = _API["state"]
                state["depth"] += 1
                try:
                    return bound(*a, **k)
                finally:
                    state["depth"] -= 1

            made.parse_known_args = parse_known_args
        except Exception:
            pass
        return made

    CreateParser.__wrapped__ = orig  # type: ignore[attr-defined]
    parser_module.CreateParser = CreateParser
