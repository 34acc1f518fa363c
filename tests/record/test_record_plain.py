"""The records ``ledger record`` writes as plain JSON (ledger/records/plain.py) are exactly what
their pydantic models write: the specs match the models, and every record a real run stores
reads back through its model to the same bytes.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _support import init_ledger, run_ledger
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from ledger.records.base import record_from_json
from ledger.records.plain import REQUIRED, SPECS, plain
from ledger.run.contract import collect_runtime_safe
from ledger.runtime.ingest import collect_runtime
from ledger.store import Store

# Fields a spec leaves out on purpose: Run.to_json drops ``imported`` and ``reads`` when they
# are None (the seal adds ``reads`` when the run read files).
LEFT_OUT = {"run": {"imported", "reads", "job"}}  # written only when there is one


def _model(path: str) -> type[BaseModel]:
    module, _, name = path.partition(":")
    model = getattr(importlib.import_module(module), name)
    assert issubclass(model, BaseModel)
    return model


@pytest.mark.parametrize("spec", sorted(SPECS))
def test_spec_matches_its_model(spec: str) -> None:
    kind, path, fields = SPECS[spec]
    model = _model(path)
    expected: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        key = info.alias or name
        if key in ("kind", "schema") or key in LEFT_OUT.get(spec, set()):
            continue
        if info.is_required():
            expected[key] = REQUIRED
        else:
            default = info.get_default(call_default_factory=True)
            assert default is not PydanticUndefined
            expected[key] = default
    assert fields == expected
    assert kind == getattr(model, "KIND", None) or (kind is None and not hasattr(model, "KIND"))


def test_plain_refuses_unknown_and_missing_fields() -> None:
    with pytest.raises(TypeError, match="no field"):
        plain("gpu", name="A100", colour="green")
    with pytest.raises(TypeError, match="needs"):
        plain("gpu", driver_version="550")
    a, b = plain("determinism"), plain("determinism")
    a["env"]["X"] = "1"  # defaults are fresh copies, never shared
    assert b["env"] == {}


def test_runtime_capture_as_json_is_the_models(tmp_path: Path) -> None:
    """Nothing written, then metrics of two ranks (one series each and a combined one): the
    capture built without pydantic is what the model dumps."""
    store = Store.init(tmp_path / ".ledger")
    staging = tmp_path / "staging"
    staging.mkdir()

    def expected() -> dict[str, Any]:
        data = collect_runtime(staging, store).model_dump(mode="json")
        data.pop("metrics")
        return data

    fast, summaries, notes = collect_runtime_safe(store, staging)
    assert (fast, summaries, notes) == (expected(), [], [])
    (staging / "metrics").mkdir()
    for rank in (0, 1):
        lines = [{"header": {"rank": rank, "world_size": 2, "wall_start": 100.0}}]
        lines += [{"step": s, "t": 0.5 * s, "v": {"loss": 1.0 / (s + 1 + rank)}} for s in range(3)]
        lines += [{"step": 3, "t": 2.0, "v": {"loss": float("nan")}}]
        text = "\n".join(json.dumps(line) for line in lines) + "\n"
        (staging / "metrics" / f"rank-{rank}.jsonl").write_text(text)
    fast, summaries, notes = collect_runtime_safe(store, staging, 100.0)
    model = collect_runtime(staging, store, started_at=100.0)
    data = model.model_dump(mode="json")
    assert repr(summaries) == repr(data.pop("metrics"))
    assert len(summaries) == 3  # rank 0, rank 1, combined
    assert repr(fast) == repr(data) and notes == data["notes"]


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e")
    subprocess.run(["git", *args], cwd=root, check=True, env=env, capture_output=True)


def _records(store: Store) -> list[tuple[str, bytes, Any]]:
    """Every JSON record in the store: (oid, stored bytes, parsed value)."""
    out = []
    for oid in sorted(store.objects):
        data = store.objects.get_bytes(oid)
        try:
            value = json.loads(data)
        except ValueError:
            continue  # a log, a patch: not a record
        if isinstance(value, dict) and "kind" in value:
            out.append((oid, data, value))
    return out


@pytest.mark.parametrize("dirty", [False, True])
def test_recorded_records_read_back_through_their_models(tmp_path: Path, dirty: bool) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text("print('training')\n")
    _git(root, "init", "-q")
    _git(root, "remote", "add", "origin", "https://user:secret@example.org/x.git")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    init_ledger(root)
    if dirty:  # a patch, and a Tree of untracked files (one a symlink)
        (root / "train.py").write_text("print('changed')\n")
        (root / "data").mkdir()
        (root / "data" / "notes.txt").write_text("untracked\n")
        (root / "data" / "link").symlink_to("notes.txt")
    r = run_ledger(
        "record", "-n", "plain", "-t", "k=v", "--", sys.executable, "-c", "pass", cwd=root
    )
    assert r.returncode == 0, r.stderr
    store = Store.open(root / ".ledger")
    kinds = []
    for _oid, data, value in _records(store):
        model = record_from_json(value)
        assert model.canonical() == data, value["kind"]
        kinds.append(value["kind"])
    assert {"code", "environment", "contract", "config", "run"} <= set(kinds), kinds
    assert ("tree" in kinds) is dirty
    assert kinds.count("run") == 2  # the running record and the sealed one
    runs = [v for _, _, v in _records(store) if v["kind"] == "run"]
    sealed = next(v for v in runs if v["status"] == "succeeded")
    assert sealed["name"] == "plain" and sealed["tags"] == {"k": "v"}
    code = next(v for _, _, v in _records(store) if v["kind"] == "code")
    assert code["dirty"] is dirty and (code["patch_stats"] is not None) is dirty
    assert (code["untracked"] is not None) is dirty
    assert "secret" not in json.dumps(code["remotes"])
    v = run_ledger("verify", cwd=root)
    assert v.returncode == 0, v.stdout + v.stderr


GOOD = {
    "argparse": {
        "prog": "train.py",
        "argv": ["--lr", "0.1"],
        "namespace": {"lr": 0.1, "layers": [1, 2], "name": None},
        "unknown": [],
        "method": "parse_known_args",
        "script": "train.py",
        "pid": 12,
        "seq": 1,
        "time": 1764567890.25,
    },
    "hydra": {
        "config": {"model": {"depth": 3}},
        "resolved": True,
        "overrides": ["model.depth=3"],
        "output_dir": "outputs/x",
        "pid": 12,
        "seq": 2,
        "time": 1764567890.5,
    },
}
# Each changes one field of a good capture: the model coerces or refuses these.
ODD = [
    {"time": 5},
    {"pid": True},
    {"pid": -1},
    {"seq": 0},
    {"seq": "3"},
    {"time": float("nan")},
    {"argv": ["a", 1]},
    {"surplus": 1},
    {"pid": None},
]


@pytest.mark.parametrize("kind", ["argparse", "hydra"])
@pytest.mark.parametrize("change", [{}, *ODD], ids=repr)
def test_captures_read_without_the_model_are_what_the_model_makes(
    kind: str, change: dict[str, Any]
) -> None:
    from pydantic import ValidationError

    from ledger.capture.config import _validated, plain_capture
    from ledger.records import config as models

    item = {**GOOD[kind], **change}
    if kind == "hydra" and "argv" in change:
        item = {**GOOD[kind], "overrides": change["argv"]}
    model = models.ArgparseCapture if kind == "argparse" else models.HydraCapture
    try:
        expected: dict[str, Any] | None = model.model_validate(item).model_dump(mode="json")
    except ValidationError:
        expected = None
    got = _validated(kind, item)  # type: ignore[arg-type]
    assert repr(got) == repr(expected)  # same values, same types (5 is not 5.0)
    assert (plain_capture(kind, item) is not None) is (change == {})  # type: ignore[arg-type]


def test_an_argparse_run_is_recorded_without_pydantic(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text(
        "import argparse\n"
        "p = argparse.ArgumentParser()\n"
        "p.add_argument('--lr', type=float, default=0.1)\n"
        "p.add_argument('--tag', nargs='*', default=['a'])\n"
        "print(p.parse_args())\n"
    )
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    init_ledger(root)
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['ledger', 'record', '--', sys.executable, 'train.py', '--lr', '0.5']\n"
        "try:\n"
        "    runpy.run_module('ledger', run_name='__main__')\n"
        "finally:\n"
        "    print('pydantic' in sys.modules, file=sys.stderr)\n"
    )
    from _support import subprocess_env

    r = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=root,
        env=subprocess_env(),
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip().splitlines()[-1] == "False", r.stderr
    store = Store.open(root / ".ledger")
    configs = [(d, v) for _, d, v in _records(store) if v["kind"] == "config"]
    assert len(configs) == 1
    data, config = configs[0]
    assert config["resolved"] == {"lr": 0.5, "tag": ["a"]}
    assert record_from_json(config).canonical() == data


@pytest.mark.parametrize(
    "points",
    [
        [],
        [(0, None, 0.5, 1.0)],
        [(None, None, 0.1, 2.0), (None, 64, 0.2, float("nan"))],
        [(3, 10, 0.1, float("inf")), (4, 20, 0.2, -0.0), (5, None, None, float("-inf"))],
        [(1, None, 0.1, 1e-07), (2, None, 0.2, 3)],
    ],
    ids=repr,
)
def test_metric_series_as_json_is_what_the_models_write(points: list[Any]) -> None:
    from ledger.records.metrics import build_series, summarize
    from ledger.records.plain import series_json, summary_json

    oid = "b3:" + "0" * 64
    model = build_series("loss", "stdout", points)
    data, values = series_json("loss", "stdout", points)
    assert repr(data) == repr(model.to_json())
    assert repr(summary_json(data, values, oid)) == repr(
        summarize(model, oid).model_dump(mode="json")
    )


def test_a_metric_run_is_recorded_without_pydantic(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text(
        "for i, v in enumerate(['0.5', 'nan', '0.25', 'inf']):\n"
        "    print(f'step {i} loss {v} acc {i / 4}')\n"
    )
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    init_ledger(root)
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['ledger', 'record', '-m', r'step (?P<step>\\d+) loss (?P<loss>\\S+)',\n"
        "            '-m', r'acc (?P<acc>\\S+)', '--', sys.executable, 'train.py']\n"
        "try:\n"
        "    runpy.run_module('ledger', run_name='__main__')\n"
        "finally:\n"
        "    print('pydantic' in sys.modules, file=sys.stderr)\n"
    )
    from _support import subprocess_env

    r = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=root,
        env=subprocess_env(),
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip().splitlines()[-1] == "False", r.stderr
    store = Store.open(root / ".ledger")
    kinds = []
    for _oid, data, value in _records(store):
        assert record_from_json(value).canonical() == data, value["kind"]
        kinds.append(value["kind"])
    assert kinds.count("metric-series") == 2
    sealed = next(v for _, _, v in _records(store) if v.get("status") == "succeeded")
    loss = next(m for m in sealed["metrics"] if m["name"] == "loss")
    assert (loss["last"], loss["nonfinite_count"], loss["first_nonfinite_step"]) == ("inf", 2, 1)


def test_a_run_logging_through_the_runtime_is_recorded_without_pydantic(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "train.py").write_text(
        "import ledger\nfor i in range(3):\n    ledger.log(step=i, loss=1.0 / (i + 1))\n"
    )
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    init_ledger(root)
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['ledger', 'record', '--', sys.executable, 'train.py']\n"
        "try:\n"
        "    runpy.run_module('ledger', run_name='__main__')\n"
        "finally:\n"
        "    print('pydantic' in sys.modules, file=sys.stderr)\n"
    )
    from _support import subprocess_env

    r = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=root,
        env=subprocess_env(),
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip().splitlines()[-1] == "False", r.stderr
    store = Store.open(root / ".ledger")
    for _oid, data, value in _records(store):
        assert record_from_json(value).canonical() == data, value["kind"]
    sealed = next(v for _, _, v in _records(store) if v.get("status") == "succeeded")
    assert [(m["name"], m["source"], m["count"]) for m in sealed["metrics"]] == [("loss", "api", 3)]
    assert sealed["runtime"]["ranks"] == [0]
