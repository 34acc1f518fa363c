"""`ledger checkpoints` and `ledger checkpoint export`, through typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from ledger.cli import checkpoint_cmds
from ledger.store import Store

torch = pytest.importorskip("torch")

from ledger.torch.checkpoint import save_checkpoint  # noqa: E402

pytestmark = pytest.mark.torch


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command("noop")(lambda: None)  # keeps typer in multi-command mode
    checkpoint_cmds.register(app)
    return app


def _saved(store: Store) -> list[str]:
    w = {f"w{i}": torch.randn(64, 64) for i in range(4)}
    first = save_checkpoint({"model": w, "epoch": 1}, step=10, store=store, run_id="run-a")
    w["w0"].mul_(2)
    second = save_checkpoint({"model": w, "epoch": 2}, step=20, store=store, run_id="run-a")
    return [first.oid, second.oid]


def test_checkpoints_lists_steps_sizes_and_dedup(store: Store) -> None:
    oids = _saved(store)
    res = CliRunner().invoke(_app(), ["checkpoints", "run-", "--ledger", str(store.root), "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert [(r["step"], r["oid"], r["latest"]) for r in rows] == [
        (10, oids[0], False),
        (20, oids[1], True),
    ]
    assert rows[1]["bytes_total"] == 4 * 64 * 64 * 4 and rows[1]["bytes_new"] == 64 * 64 * 4
    assert rows[1]["dedup_ratio"] == pytest.approx(0.75)
    table = CliRunner().invoke(_app(), ["checkpoints", "run-a", "--ledger", str(store.root)])
    assert table.exit_code == 0 and "75%" in table.stdout and "(latest)" in table.stdout


def test_checkpoints_of_an_unknown_run_fails(store: Store, cli) -> None:  # type: ignore[no-untyped-def]
    # Through the real entry point: the documented exit code 2 and a one-line error.
    r = cli("checkpoints", "nope", "--ledger", str(store.root))
    assert r.exit_code == 2, r
    assert "ledger: error:" in r.stderr and "no run 'nope'" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("fmt", ["safetensors", "pt"])
def test_export_writes_a_loadable_file(store: Store, tmp_path: Path, fmt: str) -> None:
    oids = _saved(store)
    out = tmp_path / f"x.{fmt}"
    args = ["checkpoint", "export", "run-a", "--format", fmt, "--out", str(out)]
    res = CliRunner().invoke(_app(), [*args, "--ledger", str(store.root), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["checkpoint"] == oids[1]
    if fmt == "safetensors":
        from safetensors import safe_open

        with safe_open(str(out), "pt") as f:
            assert f.metadata()["ledger.checkpoint"] == oids[1]
            assert sorted(f.keys()) == [f"model/w{i}" for i in range(4)]
            w0 = f.get_tensor("model/w0")
    else:
        loaded = torch.load(out, weights_only=True)
        assert loaded["epoch"] == 2
        w0 = loaded["model"]["w0"]
    assert w0.shape == (64, 64)


def test_export_refuses_an_unknown_format(store: Store, tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    _saved(store)
    args = ["checkpoint", "export", "run-a", "-f", "onnx", "-o", str(tmp_path / "x")]
    r = cli(*args, "--ledger", str(store.root))
    # --format is a choice: the value is refused before anything runs (exit 2), in ledger's form.
    assert r.exit_code == 2, r
    assert "ledger: error:" in r.stderr and "'onnx' is not one of" in " ".join(r.stderr.split())
    assert "ledger: hint:" in r.stderr
    assert not (tmp_path / "x").exists()
