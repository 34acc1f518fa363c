"""The records ``ledger record`` writes on its plain path, built as JSON dicts without pydantic.

Importing pydantic and building the models' validators costs about 0.1 s of CPU, which every
recorded run paid before its command started. The dicts built here are exactly what the models
write (``Model(...).to_json()``): the same keys, defaults and values, hence the same canonical
bytes and ids. ``tests/record/test_record_plain.py`` holds each spec to its model (field names,
aliases and defaults) and checks that every record a real run writes reads back through its model
byte for byte; the models stay the format's definition (``schemas/`` is generated from them).

A spec lists each field with its default, or ``REQUIRED``. Values must already be JSON (strings,
numbers, lists, dicts; datetimes formatted with ``ledger._canonical.format_datetime``). The few
rules the models and the plain path share live here too, so that there is one copy of each: a
Tree's path rule (``safe_relpath``), the encoding of non-finite floats (``json_float``), and a
metric series' columns and summary (``series_columns``, ``summary_fields``).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath
from typing import Any, Final

from .._canonical import canonical_json
from .._hashing import hash_bytes

__all__ = [
    "REQUIRED",
    "SPECS",
    "config_digest",
    "json_float",
    "plain",
    "safe_relpath",
    "series_columns",
    "series_json",
    "summary_fields",
    "summary_json",
]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Final = _Required()

# name -> (kind or None for a part, the model's "module:Class", {field (by alias): default})
SPECS: dict[str, tuple[str | None, str, dict[str, Any]]] = {
    "code": (
        "code",
        "ledger.records.code:CodeSnapshot",
        {
            "in_repo": REQUIRED,
            "root": REQUIRED,
            "cwd_relpath": ".",
            "object_format": "sha1",
            "commit": None,
            "branch": None,
            "remotes": {},
            "dirty": False,
            "patch": None,
            "patch_stats": None,
            "untracked": None,
            "submodules": [],
            "snapshot": None,
            "truncated": False,
            "redacted": [],
            "notes": [],
        },
    ),
    "reads": (
        "reads",
        "ledger.records.reads:Reads",
        {"files": [], "n_files": 0, "truncated": False, "notes": []},
    ),
    "read_file": (None, "ledger.records.reads:ReadFile", {"path": REQUIRED, "status": REQUIRED}),
    "patch_stats": (
        None,
        "ledger.records.code:PatchStats",
        {"files": REQUIRED, "bytes": REQUIRED},
    ),
    "submodule": (
        None,
        "ledger.records.code:Submodule",
        {"path": REQUIRED, "commit": REQUIRED, "dirty": False, "url": None},
    ),
    "environment": (
        "environment",
        "ledger.records.env:Environment",
        {
            "python": REQUIRED,
            "os": REQUIRED,
            "hostname": REQUIRED,
            "cpu": REQUIRED,
            "memory_total": REQUIRED,
            "packages": REQUIRED,
            "determinism": REQUIRED,
        },
    ),
    "python": (
        None,
        "ledger.records.env:PythonInfo",
        {"version": REQUIRED, "implementation": REQUIRED, "executable": REQUIRED},
    ),
    "os": (
        None,
        "ledger.records.env:OsInfo",
        {"system": REQUIRED, "release": REQUIRED, "machine": REQUIRED, "libc": REQUIRED},
    ),
    "cpu": (
        None,
        "ledger.records.env:CpuInfo",
        {"model": REQUIRED, "logical_count": REQUIRED, "affinity_count": REQUIRED},
    ),
    "gpu": (
        None,
        "ledger.records.env:GpuInfo",
        {"name": REQUIRED, "driver_version": "", "memory_total": ""},
    ),
    "torch": (
        None,
        "ledger.records.env:TorchInfo",
        {
            "version": REQUIRED,
            "cuda": None,
            "hip": None,
            "git_version": None,
            "cudnn": None,
            "nccl": None,
        },
    ),
    "determinism": (
        None,
        "ledger.records.env:Determinism",
        {
            "env": {},
            "world_size": None,
            "rank": None,
            "local_rank": None,
            "torch": None,
            "gpus": [],
        },
    ),
    "contract": (
        "contract",
        "ledger.records.contract:Contract",
        {
            "argv": REQUIRED,
            "argv_b64": None,
            "cwd": REQUIRED,
            "code": REQUIRED,
            "code_digest": REQUIRED,
            "config_files": [],
            "inputs": [],
            "environment": REQUIRED,
            "env_digest": REQUIRED,
            "env_vars": {},
            "seed_root": None,
            "metric_patterns": [],
            "outputs": [],
            "env_names": [],
        },
    ),
    "config": (
        "config",
        "ledger.records.config:ConfigCapture",
        {
            "argv": REQUIRED,
            "files": [],
            "argparse": [],
            "hydra": [],
            "script": [],
            "parsers": [],
            "resolved": {},
            "notes": [],
            "empty_reason": "",
        },
    ),
    "tree": (
        "tree",
        "ledger.records.tree:Tree",
        {"entries": REQUIRED, "total_size": REQUIRED, "truncated": False, "note": ""},
    ),
    "tree_entry": (
        None,
        "ledger.records.tree:TreeEntry",
        {"path": REQUIRED, "type": "file", "executable": False, "size": REQUIRED, "oid": REQUIRED},
    ),
    # What the runtime wrote into a run: Run.runtime holds it without "metrics".
    "runtime": (
        None,
        "ledger.records.runtime:RuntimeCapture",
        {
            "ranks": [],
            "world_size": None,
            "metrics": [],
            "seeds": [],
            "rng_states": [],
            "determinism": [],
            "alerts": [],
            "traces": [],
            "notes": [],
        },
    ),
    "argparse": (
        None,
        "ledger.records.config:ArgparseCapture",
        {
            "prog": REQUIRED,
            "argv": REQUIRED,
            "namespace": REQUIRED,
            "unknown": [],
            "method": "parse_args",
            "script": "",
            "pid": REQUIRED,
            "seq": REQUIRED,
            "time": 0.0,
        },
    ),
    "hydra": (
        None,
        "ledger.records.config:HydraCapture",
        {
            "config": REQUIRED,
            "resolved": REQUIRED,
            "overrides": [],
            "output_dir": "",
            "pid": REQUIRED,
            "seq": REQUIRED,
            "time": 0.0,
        },
    ),
    "script": (
        None,
        "ledger.records.config:ScriptCapture",
        {
            "when": REQUIRED,
            "values": REQUIRED,
            "typed": {},
            "left_out": {},
            "overrides": {},
            "argv": [],
            "script": "",
            "source": False,
            "rank": None,
            "pid": REQUIRED,
            "seq": REQUIRED,
            "time": 0.0,
        },
    ),
    "parser": (
        None,
        "ledger.records.config:ParserCapture",
        {
            "parser": REQUIRED,
            "name": REQUIRED,
            "values": REQUIRED,
            "argv": [],
            "rank": None,
            "pid": REQUIRED,
            "seq": REQUIRED,
            "time": 0.0,
        },
    ),
    "metric_series": (
        "metric-series",
        "ledger.records.metrics:MetricSeries",
        {
            "name": REQUIRED,
            "source": REQUIRED,
            "rank": None,
            "step": REQUIRED,
            "samples": REQUIRED,
            "wall": REQUIRED,
            "value": REQUIRED,
        },
    ),
    "metric_summary": (
        None,
        "ledger.records.metrics:MetricSummary",
        {
            "name": REQUIRED,
            "source": REQUIRED,
            "rank": None,
            "series": REQUIRED,
            "count": REQUIRED,
            "last": None,
            "last_step": None,
            "last_finite": None,
            "last_finite_step": None,
            "first_nonfinite_step": None,
            "nonfinite_count": 0,
            "min": None,
            "max": None,
        },
    ),
    # A run record of a recorded (not imported) run: ``Run.to_json`` leaves ``imported`` out
    # (and ``reads`` and ``job`` when there are none; ledger/run/record.py adds them).
    "run": (
        "run",
        "ledger.records.run:Run",
        {
            "run_id": REQUIRED,
            "name": None,
            "tags": {},
            "status": REQUIRED,
            "exit_code": None,
            "signal": None,
            "interrupted_by": None,
            "started": REQUIRED,
            "ended": None,
            "wall_seconds": None,
            "cpu_user_seconds": None,
            "cpu_system_seconds": None,
            "peak_rss_bytes": None,
            "host": REQUIRED,
            "pid": REQUIRED,
            "contract": REQUIRED,
            "contract_digest": REQUIRED,
            "resolved_config": None,
            "stdout": None,
            "stderr": None,
            "metrics": [],
            "outputs": [],
            "inputs_after": [],
            "inputs_changed": False,
            "runtime": None,
            "checkpoints": [],
            "replay_of": None,
            "ledger_version": REQUIRED,
            "notes": [],
        },
    ),
}


def safe_relpath(value: str) -> str:
    """Refuse anything that could land outside the directory it is unpacked into (the rule of
    every path in a Tree, ``ledger.records.tree.SafePath``)."""
    p = PurePosixPath(value)
    if (
        not value
        or value.startswith("/")
        or "\\" in value
        or "\x00" in value
        or any(part in {"..", ""} for part in value.split("/"))
        or p.is_absolute()
    ):
        raise ValueError(f"unsafe path {value!r}: paths must be relative and stay inside")
    return value


def plain(spec: str, /, **values: Any) -> dict[str, Any]:
    """The JSON of the record (or part) ``spec`` with these field values, defaults filled in:
    what its model's ``to_json()`` (``model_dump(mode="json")`` for a part) returns."""
    kind, model, fields = SPECS[spec]
    unknown = values.keys() - fields.keys()
    if unknown:
        raise TypeError(f"{model} has no field(s) {sorted(unknown)}")
    missing = [k for k, v in fields.items() if v is REQUIRED and k not in values]
    if missing:
        raise TypeError(f"{model} needs {missing}")
    out: dict[str, Any] = {} if kind is None else {"kind": kind, "schema": 1}
    for key, default in fields.items():
        out[key] = values[key] if key in values else copy.copy(default)
    return out


def config_digest(config: dict[str, Any]) -> str:
    """Digest of a config record's configuration itself (``ConfigCapture.config_digest``):
    ignores process ids, times and notes, so the same command with the same files and arguments
    gets the same digest on every run."""
    return hash_bytes(
        canonical_json(
            {
                "argv": config["argv"],
                "files": [[f["path"], f["oid"]] for f in config["files"]],
                # sorted: ranks of one run capture in any order
                "argparse": sorted(
                    ([a["prog"], a["argv"], a["namespace"]] for a in config["argparse"]),
                    key=canonical_json,
                ),
                "hydra": sorted(
                    ([h["config"], h["overrides"]] for h in config["hydra"]), key=canonical_json
                ),
                "resolved": config["resolved"],
                # Newer sources only when present: the digests of configs without them stay.
                **{
                    k: sorted((p["values"] for p in config[k]), key=canonical_json)
                    for k in ("script", "parsers")
                    if config.get(k)
                },
            }
        )
    )


def json_float(value: float) -> float | str:
    """A float as records store it (``ledger.records.base.JsonFloat``): NaN and the infinities
    as ``"nan"``, ``"inf"``, ``"-inf"``, since canonical JSON has none."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


Point = tuple[int | None, int | None, float | None, float]  # step, samples, wall, value


def series_columns(
    points: Iterable[Point],
) -> tuple[list[int | None], list[int | None], list[float | None], list[float]]:
    """A metric series' columns (step, samples, wall, value) from its points."""
    steps: list[int | None] = []
    samples: list[int | None] = []
    wall: list[float | None] = []
    values: list[float] = []
    for step, n, t, v in points:
        steps.append(step)
        samples.append(n)
        wall.append(t)
        values.append(float(v))
    return steps, samples, wall, values


def summary_fields(step: Sequence[int | None], value: Sequence[float]) -> dict[str, Any]:
    """What a run record says about a series' values (``MetricSummary``), besides its name,
    source, rank and id."""
    last_finite = last_finite_step = first_bad = None
    bad = 0
    finite: list[float] = []
    for i, v in enumerate(value):
        at = step[i] if step[i] is not None else i
        if math.isfinite(v):
            last_finite, last_finite_step = v, at
            finite.append(v)
        else:
            bad += 1
            if first_bad is None:
                first_bad = at
    n = len(value)
    return dict(
        count=n,
        last=value[-1] if n else None,
        last_step=(step[-1] if step[-1] is not None else n - 1) if n else None,
        last_finite=last_finite,
        last_finite_step=last_finite_step,
        first_nonfinite_step=first_bad,
        nonfinite_count=bad,
        min=min(finite) if finite else None,
        max=max(finite) if finite else None,
    )


def series_json(
    name: str, source: str, points: Iterable[Point], rank: int | None = None
) -> tuple[dict[str, Any], list[float]]:
    """``build_series(...).to_json()``, and the values as floats (for ``summary_json``)."""
    steps, samples, wall, values = series_columns(points)
    data = plain(
        "metric_series",
        name=name,
        source=source,
        rank=rank,
        step=steps,
        samples=samples,
        wall=wall,
        value=[json_float(v) for v in values],
    )
    return data, values


def summary_json(series: dict[str, Any], values: list[float], oid: str) -> dict[str, Any]:
    """``summarize(series, oid)`` dumped: the summary of a series built by ``series_json``."""
    fields = summary_fields(series["step"], values)
    if fields["last"] is not None:
        fields["last"] = json_float(fields["last"])
    return plain(
        "metric_summary",
        name=series["name"],
        source=series["source"],
        rank=series["rank"],
        series=oid,
        **fields,
    )
