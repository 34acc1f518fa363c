"""The startup hook in real child processes: argparse and Hydra captured, user code untouched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from ledger.capture.config import (
    build_config_capture,
    collect_capture_notes,
    collect_config_captures,
    collect_hydra_captures,
)
from ledger.capture.redact import REDACTED

REPO = Path(__file__).resolve().parents[2]
HOOK_DIR = REPO / "ledger" / "_hook"


def run(
    tmp_path: Path,
    script: str,
    *args: str,
    extra_path: tuple[Path, ...] = (),
    run_dir: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "script.py"
    path.write_text(textwrap.dedent(script), encoding="utf-8")
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
    child_env.update(
        PYTHONPATH=os.pathsep.join([str(HOOK_DIR), *map(str, extra_path)]),
        LEDGER_HOOK_DIR=str(HOOK_DIR),
        **env or {},
    )
    if run_dir is not None:
        child_env["LEDGER_RUN_DIR"] = str(run_dir)
    return subprocess.run(
        [sys.executable, str(path), *args],
        cwd=tmp_path,
        env=child_env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


ARGPARSE_SCRIPT = """
    import argparse, enum, json, pathlib, sys

    class Mode(enum.Enum):
        FAST = "fast"

    p = argparse.ArgumentParser(prog="train")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--out", type=pathlib.Path, default=pathlib.Path("runs/x"))
    p.add_argument("--mode", type=Mode, default=Mode.FAST)
    p.add_argument("--layers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--api-key", default=None)
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args()
    print(json.dumps({"lr": args.lr, "key": args.api_key}))
"""


def test_argparse_namespace_with_defaults(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc = run(tmp_path, ARGPARSE_SCRIPT, "--lr", "0.5", "--api-key", "SEKRET-42", run_dir=run_dir)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"lr": 0.5, "key": "SEKRET-42"}  # the program saw its args
    (cap,) = collect_config_captures(run_dir)
    assert cap.prog == "train" and cap.method == "parse_args" and cap.seq == 1
    assert cap.argv == ["--lr", "0.5", "--api-key", REDACTED]
    assert cap.namespace == {
        "lr": 0.5,
        "out": "runs/x",
        "mode": "Mode.FAST",
        "layers": [1, 2],
        "api_key": REDACTED,
        "verbose": False,
    }
    assert cap.script.endswith("script.py") and cap.pid > 0
    raw = "".join(p.read_text() for p in (run_dir / "config").iterdir())
    assert "SEKRET-42" not in raw  # redacted in the child already, not only when collected
    assert collect_capture_notes(run_dir) == []


def test_subparsers_captured_once(tmp_path: Path) -> None:
    script = """
        import argparse
        p = argparse.ArgumentParser(prog="tool")
        p.add_argument("--seed", type=int, default=0)
        sub = p.add_subparsers(dest="cmd", required=True)
        fit = sub.add_parser("fit")
        fit.add_argument("--epochs", type=int, default=3)
        sub.add_parser("eval").add_argument("--split", default="val")
        print(vars(p.parse_args()))
    """
    run_dir = tmp_path / "run"
    proc = run(tmp_path, script, "--seed", "5", "fit", run_dir=run_dir)
    assert proc.returncode == 0, proc.stderr
    (cap,) = collect_config_captures(run_dir)
    assert cap.namespace == {"seed": 5, "cmd": "fit", "epochs": 3}
    assert cap.argv == ["--seed", "5", "fit"]


def test_parse_known_args_and_twice(tmp_path: Path) -> None:
    script = """
        import argparse
        p = argparse.ArgumentParser(prog="two")
        p.add_argument("--a", type=int, default=1)
        known, rest = p.parse_known_args()
        q = argparse.ArgumentParser(prog="second")
        q.add_argument("--b", default="x")
        q.parse_args(rest)
        q.parse_args(iter(["--b", "y"]))  # a generator: the program must still see its values
        print(q.parse_args(iter(["--b", "z"])).b)
    """
    run_dir = tmp_path / "run"
    proc = run(tmp_path, script, "--a", "2", "--b", "w", run_dir=run_dir)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "z"
    caps = collect_config_captures(run_dir)
    assert [(c.prog, c.method, c.seq) for c in caps] == [
        ("two", "parse_known_args", 1),
        ("second", "parse_args", 2),
        ("second", "parse_args", 3),
        ("second", "parse_args", 4),
    ]
    assert caps[0].namespace == {"a": 2} and caps[0].unknown == ["--b", "w"]
    assert [c.namespace["b"] for c in caps[1:]] == ["w", "y", "z"]
    assert caps[2].argv == ["--b", "y"]
    # the merged view: later captures win
    assert build_config_capture(["x"], argparse=caps).resolved == {"a": 2, "b": "z"}


def test_usage_error_and_help_write_nothing(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc = run(tmp_path, ARGPARSE_SCRIPT, "--lr", "notanumber", run_dir=run_dir)
    assert proc.returncode == 2 and "invalid float value" in proc.stderr
    proc = run(tmp_path, ARGPARSE_SCRIPT, "--help", run_dir=run_dir)
    assert proc.returncode == 0 and "--api-key" in proc.stdout
    assert collect_config_captures(run_dir) == []


def test_user_sitecustomize_still_runs(tmp_path: Path) -> None:
    site = tmp_path / "usersite"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os\nos.environ['USER_SITE_RAN'] = 'yes'\n", encoding="utf-8"
    )
    script = """
        import os, sys, argparse
        argparse.ArgumentParser().parse_args([])
        print(os.environ.get("USER_SITE_RAN"), sys.modules["sitecustomize"].__file__)
        print(any(p.endswith(os.path.join("ledger", "_hook")) for p in sys.path))
    """
    run_dir = tmp_path / "run"
    proc = run(tmp_path, script, extra_path=(site,), run_dir=run_dir)
    assert proc.returncode == 0, proc.stderr
    ran, origin, hook_on_path = proc.stdout.split()
    assert ran == "yes" and origin == str(site / "sitecustomize.py")
    assert hook_on_path == "False"  # our directory is taken off sys.path again
    assert len(collect_config_captures(run_dir)) == 1
    # and without a run directory the hook only chains
    proc = run(tmp_path, script, extra_path=(site,))
    assert proc.returncode == 0 and proc.stdout.startswith("yes ")


def test_hook_imports_nothing_at_startup(tmp_path: Path) -> None:
    script = """
        import sys
        heavy = ("argparse", "json", "hydra", "omegaconf", "ledger")
        print(sorted(m for m in heavy if m in sys.modules))
    """
    proc = run(tmp_path, script, run_dir=tmp_path / "run")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_failed_capture_leaves_a_note_and_the_program_runs(tmp_path: Path) -> None:
    script = """
        import argparse
        class Bad(dict):
            def items(self):
                raise RuntimeError("cannot look inside")
        p = argparse.ArgumentParser()
        p.set_defaults(bad=Bad())
        p.add_argument("--x", default=1)
        print(p.parse_args().x)
    """
    run_dir = tmp_path / "run"
    proc = run(tmp_path, script, "--x", "7", run_dir=run_dir)
    assert proc.returncode == 0 and proc.stdout.strip() == "7", proc.stderr
    assert proc.stderr == ""
    assert collect_config_captures(run_dir) == []
    (note,) = collect_capture_notes(run_dir)
    assert note.startswith("argparse-") and "RuntimeError: cannot look inside" in note


def test_unwritable_run_dir_is_silent(tmp_path: Path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("not a directory")
    proc = run(tmp_path, ARGPARSE_SCRIPT, "--lr", "1", run_dir=blocker)
    assert proc.returncode == 0 and proc.stderr == ""
    assert json.loads(proc.stdout)["lr"] == 1.0


def test_child_processes_inherit_the_hook(tmp_path: Path) -> None:
    script = """
        import subprocess, sys, argparse
        argparse.ArgumentParser(prog="parent").parse_args([])
        subprocess.run([sys.executable, "-c",
            "import argparse; argparse.ArgumentParser(prog='child').parse_args([])"], check=True)
    """
    run_dir = tmp_path / "run"
    proc = run(tmp_path, script, run_dir=run_dir)
    assert proc.returncode == 0, proc.stderr
    caps = collect_config_captures(run_dir)
    assert sorted(c.prog for c in caps) == ["child", "parent"]
    assert len({c.pid for c in caps}) == 2


@pytest.mark.slow
def test_hydra_task_config_captured(tmp_path: Path) -> None:
    pytest.importorskip("hydra")
    (tmp_path / "conf.yaml").write_text(
        "model:\n  depth: 4\nlr: 0.1\nscaled: ${lr}\nwandb_api_key: abc123secret\n",
        encoding="utf-8",
    )
    script = """
        import hydra
        from omegaconf import DictConfig

        @hydra.main(version_base=None, config_path=".", config_name="conf")
        def main(cfg: DictConfig) -> None:
            print("depth", cfg.model.depth)

        if __name__ == "__main__":
            main()
    """
    run_dir = tmp_path / "run"
    out_dir = tmp_path / "hydra-out"
    proc = run(
        tmp_path, script, "model.depth=8", "lr=0.5", f"hydra.run.dir={out_dir}", run_dir=run_dir
    )
    assert proc.returncode == 0, proc.stderr
    assert "depth 8" in proc.stdout
    (cap,) = collect_hydra_captures(run_dir)
    expected: dict[str, Any] = {
        "model": {"depth": 8},
        "lr": 0.5,
        "scaled": 0.5,
        "wandb_api_key": REDACTED,
    }
    assert cap.config == expected and cap.resolved
    assert cap.overrides == ["model.depth=8", "lr=0.5"]
    assert cap.output_dir == str(out_dir)
    assert (out_dir / ".hydra" / "config.yaml").is_file()  # Hydra's own copy, for --output
    assert build_config_capture(["x"], hydra=[cap]).resolved == expected
    assert collect_capture_notes(run_dir) == []
