"""Config capture: config files named on the command line, and what the child process parsed.

Files are stored verbatim as objects (replay writes them back byte for byte) and parsed into a
redacted JSON value. argparse namespaces and Hydra configs are written by the startup hook
(``ledger/_hook/sitecustomize.py``) into ``$LEDGER_RUN_DIR/config/`` and collected here after
the child exits.
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping, Sequence
from enum import Enum
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, Literal

from .._canonical import canonical_json
from .._parse import (
    MAX_DEPTH,
    MAX_NODES,
    MAX_RECORD_DEPTH,
    LimitError,
    ParseError,
    load_json,
    load_toml,
    load_yaml,
    read_bounded,
)
from ..errors import UsageError
from ..records.plain import config_digest, plain
from ..store import Store
from .boundary import for_store
from .secrets import Finding, KnownSecret, Scrubber, redact_lines

if TYPE_CHECKING:  # the models load where used: a plain `ledger record` runs without pydantic
    from ..records.config import (
        ArgparseCapture,
        ConfigCapture,
        ConfigFile,
        HydraCapture,
        ParserCapture,
        ScriptCapture,
    )
    from .secret_memo import CleanMemo

__all__ = [
    "build_config_capture",
    "build_config_json",
    "collect_capture_notes",
    "collect_config_captures",
    "collect_config_captures_json",
    "collect_hydra_captures",
    "collect_hydra_captures_json",
    "collect_parser_captures_json",
    "collect_script_captures_json",
    "config_digest",
    "detect_config_paths",
    "json_safe",
    "load_config_file",
    "merge_configs",
    "plain_capture",
]

Format = Literal["yaml", "json", "toml", "python", "ini"]
_EXTENSIONS: dict[str, Format] = {
    ".yaml": "yaml",
    ".yml": "yaml",
    ".json": "json",
    ".toml": "toml",
    ".py": "python",
    ".ini": "ini",
}
# Named in a command line, these are config files too; a .cfg's content says which format.
_DETECTED = frozenset({*_EXTENSIONS, ".cfg"})
# Modules whose `python -m` runs another script: the first .py after them is the program.
_PY_LAUNCHERS = frozenset(
    {"torch.distributed.run", "torch.distributed.launch", "accelerate.commands.launch"}
)
MAX_CONFIG_BYTES = 32 * 2**20
_DETECT_MAX_BYTES = 2**20  # argv entries larger than this are data, not config
# argparse parsers of launchers, not of the training script: kept, but not merged.
_LAUNCHERS = frozenset({"torchrun", "accelerate", "deepspeed", "torch.distributed.run"})


def json_safe(value: Any, _depth: int = 0) -> Any:
    """Turn parsed YAML/TOML or argparse values into JSON values: dates and paths, enums and
    other objects become strings, NaN/infinity become "nan"/"inf"/"-inf", keys become strings."""
    if _depth > 100:
        return "<too deep>"
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return value
    if isinstance(value, Mapping):
        return {str(k): json_safe(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v, _depth + 1) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((json_safe(v, _depth + 1) for v in value), key=repr)
    if isinstance(value, _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, Enum):
        return str(value.name)
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return str(value)


def _redacted_paths(before: Any, after: Any, prefix: str = "") -> list[str]:
    if isinstance(before, dict) and isinstance(after, dict):
        return [
            p
            for k in before
            for p in _redacted_paths(before[k], after.get(k), f"{prefix}.{k}" if prefix else k)
        ]
    if isinstance(before, list) and isinstance(after, list):
        return [
            p
            for i, (b, a) in enumerate(zip(before, after, strict=False))
            for p in _redacted_paths(b, a, f"{prefix}[{i}]")
        ]
    return [] if before == after else [prefix or "$"]


# --- parsing -----------------------------------------------------------------------------------


def _parse(text: str, fmt: Format) -> Any:
    """One format, through ``ledger._parse``: its caps refuse an alias bomb or a file nested
    past ``MAX_DEPTH`` (which ``json_safe`` and the redaction walk below would recurse into)."""
    if fmt == "python":
        return _python_values(text)
    if fmt == "ini":
        return _ini_values(text)
    if fmt == "json":
        return load_json(text)
    if fmt == "toml":
        return load_toml(text)
    return load_yaml(text)


def _python_values(text: str) -> dict[str, Any]:
    """A config written in Python (nanoGPT's ``config/*.py``): the names its top-level
    assignments bind to literals, as the program's ``exec`` would see them; an assignment of
    anything else (``'ft-' + str(time.time())``) is in the stored bytes only."""
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
        raise ParseError(f"not Python: {exc}") from None
    values: dict[str, Any] = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        value_node = getattr(node, "value", None)
        for target in targets:
            if not isinstance(target, ast.Name) or value_node is None:
                continue
            try:
                values[target.id] = ast.literal_eval(value_node)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                values.pop(target.id, None)
    return values


def _is_config_python(text: str) -> bool:
    """Whether a ``.py`` file reads as a config: only assignments, imports and docstrings at
    top level (a script or a test module defines functions and calls them)."""
    import ast

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    allowed = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Import, ast.ImportFrom)
    return bool(tree.body) and all(
        isinstance(n, allowed) or (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
        for n in tree.body
    )


def _ini_values(text: str) -> dict[str, Any]:
    """An INI/``setup.cfg``-style file: section -> key -> text (no interpolation)."""
    import configparser

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error as exc:
        raise ParseError(str(exc).splitlines()[0]) from None
    out: dict[str, Any] = {}
    if parser.defaults():
        out["DEFAULT"] = dict(parser.defaults())
    for section in parser.sections():
        out[section] = {k: v for k, v in parser.items(section, raw=True)}
    return out


def _sniff(text: str) -> tuple[Format, Any]:
    """Parse a file whose extension says nothing: JSON, then TOML, then YAML (a mapping or a
    list only: YAML reads almost any text as one string), then INI."""
    order: tuple[Format, ...] = ("json", "toml", "yaml", "ini")
    for fmt in order:
        try:
            value = _parse(text, fmt)
        except LimitError:
            raise  # a cap, not a wrong guess at the format
        except ParseError:
            continue
        if fmt != "yaml" or isinstance(value, dict | list):
            return fmt, value
    raise ParseError("not JSON, TOML, YAML or INI")


def load_config_file(
    path: str | Path,
    store: Store,
    scrubber: Scrubber | None = None,
    findings: list[Finding] | None = None,
) -> ConfigFile:
    """Store a config file's bytes and parse it (format by extension, else by content).

    With a ``scrubber``, secrets are redacted from the stored bytes and the parsed value; the
    lines replaced are appended to ``findings``."""
    findings = [] if findings is None else findings
    given = str(path)
    p = Path(path)
    try:
        data = read_bounded(p, MAX_CONFIG_BYTES)
    except LimitError:
        raise UsageError(
            f"config file {given} is larger than {MAX_CONFIG_BYTES} bytes; config files are "
            f"limited to {MAX_CONFIG_BYTES} bytes",
            hint="declare large files as inputs (data), not as config",
        ) from None
    except OSError as exc:
        raise UsageError(
            f"cannot read config file {given}: {exc.strerror or exc}",
            hint="check the path and its permissions",
        ) from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"config file {given} is not UTF-8 text (byte {exc.start})",
            hint="config files must be YAML, JSON, TOML, INI or Python in UTF-8",
        ) from exc
    fmt = _EXTENSIONS.get(p.suffix.lower())
    try:
        if fmt is None:
            fmt, value = _sniff(text)
        else:
            value = _parse(text, fmt)
    except LimitError as exc:
        raise UsageError(
            f"{given}{exc.where}: refused: {exc.message}",
            hint=f"a config file nests at most {MAX_DEPTH} levels and, aliases expanded, holds "
            f"at most {MAX_NODES} values",
        ) from None
    except ParseError as exc:
        what = f"malformed {fmt.upper()}" if fmt else "unrecognised config format"
        raise UsageError(
            f"{given}{exc.where}: {what}: {exc.message}",
            hint="fix the file"
            if fmt
            else "give the file a .yaml, .json, .toml, .ini or .py extension, or fix its content",
        ) from exc
    safe = json_safe(value)
    redacted = for_store("json", safe, scrubber, given)
    # Values under a secret key are gone from the parsed value; in the bytes a line detector
    # cannot see them when the key is a line above (``creds:`` then ``- value: X``, a list).
    under_keys = Scrubber(_values_under_secret_keys(safe) + _changed_values(safe, redacted))
    data = under_keys.scrub(data, given)
    if scrubber is not None:
        # The stored bytes lose known secret values and every line the detector flags (the
        # parsed value lost both above).
        data, found = redact_lines(scrubber.scrub(data, given), given)
        findings.extend(found)
    from ..records.config import ConfigFile

    return ConfigFile(
        path=given,
        oid=store.objects.put_bytes(data),
        size=len(data),
        format=fmt,
        value=redacted,
        redacted=_redacted_paths(safe, redacted),
    )


def _values_under_secret_keys(value: Any, under: bool = False) -> list[KnownSecret]:
    """Every string or number below a secret-named key, at any depth (settings excepted)."""
    from .redact import is_secret_entry, is_secret_name
    from .secrets import is_setting

    if isinstance(value, Mapping):
        out: list[KnownSecret] = []
        for k, v in value.items():
            secret = isinstance(k, str) and (
                is_secret_entry(k, v) if isinstance(v, str) else is_secret_name(k)
            )
            out += _values_under_secret_keys(v, under or secret)
        return out
    if isinstance(value, list | tuple):
        return [found for v in value for found in _values_under_secret_keys(v, under)]
    if not under or value is None or isinstance(value, bool):
        return []
    text = str(value)
    return [] if is_setting(text) else [KnownSecret("config", text)]


def _changed_values(before: Any, after: Any) -> list[KnownSecret]:
    """The strings of the parsed value that the boundary changed (the detector knows formats
    no line of the file shows whole, such as a value folded over lines): they leave the stored
    bytes too."""
    from .secrets import is_setting

    if isinstance(before, dict) and isinstance(after, dict):
        return [s for k in before for s in _changed_values(before[k], after.get(k))]
    if isinstance(before, list) and isinstance(after, list):
        return [s for b, a in zip(before, after, strict=False) for s in _changed_values(b, a)]
    if isinstance(before, str) and before != after and not is_setting(before):
        return [KnownSecret("config", before)]
    return []


def detect_config_paths(argv: Sequence[str], cwd: str | Path = ".") -> list[str]:
    """Arguments of a command line that name small existing config files (also in
    ``--opt=path`` form): .yaml/.yml/.json/.toml/.ini/.cfg, and .py files that come after the
    program itself and hold only assignments (``python train.py config/small.py``)."""
    found: list[str] = []
    program = bool(argv) and argv[0].endswith(".py")  # whether the program was passed
    args = list(argv[1:])
    for i, arg in enumerate(args):
        if arg in ("-m", "-c") and not program:
            program = arg == "-c" or (i + 1 < len(args) and args[i + 1] not in _PY_LAUNCHERS)
            continue
        candidate = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
        suffix = Path(candidate).suffix.lower()
        if suffix == ".py" and not program:
            program = True  # this is the program
            continue
        if suffix not in _DETECTED or candidate in found:
            continue
        p = Path(cwd, candidate)
        try:
            if not (p.is_file() and p.stat().st_size <= _DETECT_MAX_BYTES):
                continue
            if suffix == ".py" and not _is_config_python(p.read_bytes().decode("utf-8", "replace")):
                continue
        except OSError:
            continue
        found.append(candidate)
    return found


# --- what the child wrote ----------------------------------------------------------------------


def _read_captures(run_dir: Path, prefix: str) -> tuple[list[dict[str, Any]], list[str]]:
    items: list[dict[str, Any]] = []
    notes: list[str] = []
    for f in sorted((Path(run_dir) / "config").glob(f"{prefix}-*.json")):
        try:
            value = load_json(f.read_text(encoding="utf-8"), max_depth=MAX_RECORD_DEPTH)
            if not isinstance(value, dict):
                raise ValueError("not a JSON object")
            items.append(value)
        except (OSError, ValueError) as exc:
            notes.append(f"{f.name}: unreadable capture ({type(exc).__name__})")
    items.sort(key=lambda v: (v.get("time", 0), v.get("pid", 0), v.get("seq", 0)))
    return items, notes


# The JSON type of each field of a capture as the hook writes it: a capture that has exactly
# these is what its model would make of it (``plain_capture``); any other goes to the model.
_CAPTURE_TYPES: dict[str, dict[str, str]] = {
    "argparse": {
        "prog": "str",
        "argv": "strs",
        "namespace": "object",
        "unknown": "strs",
        "method": "str",
        "script": "str",
        "pid": "nat",
        "seq": "pos",
        "time": "float",
    },
    "hydra": {
        "config": "json",
        "resolved": "bool",
        "overrides": "strs",
        "output_dir": "str",
        "pid": "nat",
        "seq": "pos",
        "time": "float",
    },
    "script": {
        "when": "in:exit,checkpoint",
        "values": "object",
        "typed": "names",
        "left_out": "names",
        "overrides": "names",
        "argv": "strs",
        "script": "str",
        "source": "bool",
        "rank": "rank",
        "pid": "nat",
        "seq": "pos",
        "time": "float",
    },
    "parser": {
        "parser": "in:absl,click,typer,fire,jsonargparse",
        "name": "str",
        "values": "object",
        "argv": "strs",
        "rank": "rank",
        "pid": "nat",
        "seq": "pos",
        "time": "float",
    },
}

Kind = Literal["argparse", "hydra", "script", "parser"]
_CAPTURE_KINDS: tuple[Kind, ...] = ("argparse", "hydra", "script", "parser")
_MODELS = {
    "argparse": "ArgparseCapture",
    "hydra": "HydraCapture",
    "script": "ScriptCapture",
    "parser": "ParserCapture",
}


def _is_json(value: Any) -> bool:
    try:
        canonical_json(value)  # JSON types only, finite floats: as the model dumps them
    except (TypeError, ValueError):
        return False
    return True


def _has_type(kind: str, value: Any) -> bool:
    if kind == "str":
        return isinstance(value, str)
    if kind == "strs":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind in ("nat", "pos"):
        return type(value) is int and value >= (0 if kind == "nat" else 1)
    if kind == "float":
        return type(value) is float and math.isfinite(value)
    if kind == "bool":
        return type(value) is bool
    if kind.startswith("in:"):
        return isinstance(value, str) and value in kind[3:].split(",")
    if kind == "names":
        return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
    if kind == "rank":
        return value is None or (type(value) is int and value >= 0)
    if kind == "object":
        return isinstance(value, dict) and _is_json(value)
    return _is_json(value)


def plain_capture(kind: Kind, item: dict[str, Any]) -> dict[str, Any] | None:
    """``item`` as its model would dump it, when it has exactly the types the hook writes;
    else None (the model then validates it, coercing or refusing)."""
    types = _CAPTURE_TYPES[kind]
    if not item.keys() <= types.keys():
        return None
    if not all(_has_type(types[k], v) for k, v in item.items()):
        return None
    try:
        return plain(kind, **item)
    except TypeError:  # a required field is missing
        return None


def _validated(kind: Kind, item: dict[str, Any]) -> dict[str, Any] | None:
    """``item`` as its model dumps it, or None when the model refuses it."""
    fast = plain_capture(kind, item)
    if fast is not None:
        return fast
    from pydantic import ValidationError

    from ..records import config as models

    model = getattr(models, _MODELS[kind])
    try:
        dumped: dict[str, Any] = model.model_validate(item).model_dump(mode="json")
    except ValidationError:
        return None
    return dumped


def _judging(memo: CleanMemo | None) -> Scrubber | None:
    """A scrubber that knows no value, only the memo of clean lines the detector skips: the
    known values left the staged captures before (``scrub_run_dir``); a second pass could find
    a short one inside a marker."""
    return None if memo is None else Scrubber([], memo=memo)


def collect_config_captures_json(
    run_dir: str | Path, memo: CleanMemo | None = None
) -> list[dict[str, Any]]:
    """``collect_config_captures`` as JSON, without pydantic for what the hook wrote."""
    judge = _judging(memo)
    out = []
    for raw in _read_captures(Path(run_dir), "argparse")[0]:
        item = _validated(
            "argparse",
            {
                **raw,
                "argv": for_store("argv", raw.get("argv", [])),
                "unknown": for_store("argv", raw.get("unknown", [])),
                "namespace": for_store("json", json_safe(raw.get("namespace", {})), judge),
            },
        )
        if item is not None:  # else reported by collect_capture_notes
            out.append(item)
    return out


def collect_config_captures(run_dir: str | Path) -> list[ArgparseCapture]:
    """The argparse namespaces the child processes parsed, in the order they were parsed,
    redacted for the store (``ledger.capture.boundary``; the known secret values left the
    staged files before, with the rest of the staging directory: ``scrub_run_dir``)."""
    from ..records.config import ArgparseCapture

    return [ArgparseCapture.model_validate(c) for c in collect_config_captures_json(run_dir)]


def collect_hydra_captures_json(
    run_dir: str | Path, memo: CleanMemo | None = None
) -> list[dict[str, Any]]:
    """``collect_hydra_captures`` as JSON, without pydantic for what the hook wrote."""
    judge = _judging(memo)
    out = []
    for raw in _read_captures(Path(run_dir), "hydra")[0]:
        item = _validated(
            "hydra",
            {
                **raw,
                "config": for_store("json", json_safe(raw.get("config")), judge),
                "overrides": for_store("argv", raw.get("overrides", [])),
            },
        )
        if item is not None:
            out.append(item)
    return out


def collect_hydra_captures(run_dir: str | Path) -> list[HydraCapture]:
    """The configs Hydra task functions received in the child processes, redacted for the
    store as ``collect_config_captures``."""
    from ..records.config import HydraCapture

    return [HydraCapture.model_validate(c) for c in collect_hydra_captures_json(run_dir)]


def collect_script_captures_json(
    run_dir: str | Path, memo: CleanMemo | None = None
) -> list[dict[str, Any]]:
    """The module globals of each process's ``__main__`` (``script-*.json``), one capture per
    process (``ledger.capture.script_config.one_per_process``), redacted for the store."""
    from .script_config import one_per_process

    return one_per_process(_collected(run_dir, "script", memo))


def collect_parser_captures_json(
    run_dir: str | Path, memo: CleanMemo | None = None
) -> list[dict[str, Any]]:
    """The values absl, click and typer gave the program (``parser-*.json``), redacted."""
    return _collected(run_dir, "parser", memo)


def _collected(run_dir: str | Path, kind: Kind, memo: CleanMemo | None) -> list[dict[str, Any]]:
    judge = _judging(memo)
    out = []
    for raw in _read_captures(Path(run_dir), kind)[0]:
        item = _validated(
            kind,
            {
                **raw,
                "values": for_store("json", json_safe(raw.get("values", {})), judge),
                "argv": for_store("argv", raw.get("argv", [])),
            },
        )
        if item is not None:
            out.append(item)
    return out


def collect_capture_notes(run_dir: str | Path) -> list[str]:
    """One line per capture the hook could not make or that cannot be read back."""
    run_dir = Path(run_dir)
    notes: list[str] = []
    for prefix in _CAPTURE_KINDS:
        items, bad = _read_captures(run_dir, prefix)
        notes += bad
        for raw in items:
            if plain_capture(prefix, raw) is not None:
                continue  # valid as the hook wrote it
            from pydantic import ValidationError

            from ..records import config as models

            model = getattr(models, _MODELS[prefix])
            try:
                model.model_validate(raw)
            except ValidationError as exc:
                pid = raw.get("pid")
                notes.append(f"{prefix} capture of pid {pid}: invalid ({exc.error_count()} errors)")
    for f in sorted((run_dir / "config").glob("*.error")):
        try:
            notes.append(f"{f.stem}: {f.read_text(encoding='utf-8').strip()[:300]}")
        except OSError:
            notes.append(f"{f.stem}: capture failed")
    return notes


# --- the merged view ---------------------------------------------------------------------------


def merge_configs(
    base: dict[str, Any], override: Mapping[str, Any], *, keep_none: bool
) -> dict[str, Any]:
    """Deep merge: mappings merge key by key, anything else is replaced. With ``keep_none``
    false, a None in ``override`` does not replace an existing value (argparse's "not given")."""
    out = dict(base)
    for k, v in override.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), dict):
            out[k] = merge_configs(out[k], v, keep_none=keep_none)
        elif v is not None or keep_none or k not in out:
            out[k] = v
    return out


def _is_launcher(capture: dict[str, Any]) -> bool:
    script = capture["script"].replace("\\", "/")
    return capture["prog"] in _LAUNCHERS or script.endswith(
        ("torch/distributed/run.py", "torch/distributed/launch.py")
    )


def build_config_capture(
    argv: Sequence[str],
    *,
    files: Sequence[ConfigFile] = (),
    argparse: Sequence[ArgparseCapture] = (),
    hydra: Sequence[HydraCapture] = (),
    script: Sequence[ScriptCapture] = (),
    parsers: Sequence[ParserCapture] = (),
    notes: Sequence[str] = (),
) -> ConfigCapture:
    """Assemble the config record; ``argv`` is redacted for the store (``record`` passes the
    contract's, redacted already: the rules leave their own output as it is). ``resolved``
    merges, later winning: config files (in command-line order), then script globals, then
    Hydra configs, then the values of absl/click/typer, then argparse namespaces (launchers
    skipped, None values never replacing a value from a file)."""
    from ..records.config import ConfigCapture

    return ConfigCapture.model_validate(
        build_config_json(
            argv,
            files=files,
            argparse=argparse,
            hydra=hydra,
            script=script,
            parsers=parsers,
            notes=notes,
        )
    )


def build_config_json(
    argv: Sequence[str],
    *,
    files: Sequence[ConfigFile | dict[str, Any]] = (),
    argparse: Sequence[ArgparseCapture | dict[str, Any]] = (),
    hydra: Sequence[HydraCapture | dict[str, Any]] = (),
    script: Sequence[ScriptCapture | dict[str, Any]] = (),
    parsers: Sequence[ParserCapture | dict[str, Any]] = (),
    notes: Sequence[str] = (),
) -> dict[str, Any]:
    """``build_config_capture``'s record as JSON; the parts may be models or their JSON (the
    ``*_json`` collectors), which needs no pydantic (ledger/records/plain.py)."""
    from .script_config import empty_reason, script_resolved

    file_list, hydra_list, argparse_list = _dumped(files), _dumped(hydra), _dumped(argparse)
    parser_list = [p for p in _dumped(parsers) if p["values"]]
    programs = [a for a in argparse_list if not _is_launcher(a)]
    parsed_pids = {c["pid"] for c in [*programs, *hydra_list, *parser_list]}
    script_all = _dumped(script)
    script_list, script_values = script_resolved(script_all, parsed_pids)
    resolved: dict[str, Any] = {}
    for f in file_list:
        if isinstance(f["value"], dict):
            resolved = merge_configs(resolved, f["value"], keep_none=True)
    resolved = merge_configs(resolved, script_values, keep_none=True)
    for h in hydra_list:
        if isinstance(h["config"], dict):
            resolved = merge_configs(resolved, h["config"], keep_none=True)
    for p in parser_list:
        if p["rank"] in (None, 0):
            resolved = merge_configs(resolved, p["values"], keep_none=True)
    for a in programs:
        resolved = merge_configs(resolved, a["namespace"], keep_none=False)
    why = ""
    if not resolved:
        why = empty_reason(
            parsed=bool(parsed_pids), files=bool(file_list), argv=argv, script=script_all
        )
    return plain(
        "config",
        argv=for_store("argv", argv),
        files=file_list,
        argparse=argparse_list,
        hydra=hydra_list,
        script=script_list,
        parsers=parser_list,
        resolved=resolved,
        notes=list(notes),
        empty_reason=why,
    )


def _dumped(parts: Sequence[Any]) -> list[dict[str, Any]]:
    return [p if isinstance(p, dict) else p.model_dump(mode="json") for p in parts]
