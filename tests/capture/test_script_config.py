"""Config of programs no argparse parser or Hydra app configures, recorded with `ledger record`
from real programs in ``script_programs/`` (nanoGPT-style globals + configurator, absl, click,
typer, config objects built by hand) in a real git repository: nothing in them changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _support import init_ledger, require_module, run_ledger

from ledger.run.find import load_run
from ledger.store import Store

PROGRAMS = Path(__file__).parent / "script_programs"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@e",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@e",
        },
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "proj"
    shutil.copytree(PROGRAMS, repo, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / ".gitignore").write_text(".ledger/\nout*/\nckpt.pt\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "init")
    init_ledger(repo)
    return repo


def record(repo: Path, *command: str) -> tuple[Store, Any, dict[str, Any]]:
    """Record ``python command...``; the run and its config record."""
    r = run_ledger("record", "--json", "--", sys.executable, *command, cwd=repo)
    summary = json.loads(r.stderr.strip().splitlines()[-1])
    store = Store.open(repo / ".ledger")
    _, run = load_run(store, summary["run_id"])
    assert run.resolved_config is not None, r.stderr
    return store, run, store.get_json(run.resolved_config)


def test_nanogpt_style_globals_config_file_and_overrides(repo: Path) -> None:
    store, run, config = record(repo, "train_globals.py", "config/small.py", "--dropout=0.1")
    assert run.status == "succeeded"
    # The config .py file named on the command line: stored byte for byte, its literals read.
    (cf,) = config["files"]
    assert cf["path"] == "config/small.py" and cf["format"] == "python"
    assert store.objects.get_bytes(cf["oid"]) == (repo / "config/small.py").read_bytes()
    assert cf["value"] == {"out_dir": "out-small", "batch_size": 4, "n_layer": 1}
    contract = store.get_json(run.contract)
    assert [f["path"] for f in contract["config_files"]] == ["config/small.py"]
    # The globals as they stood at exit, marked as script globals, with the override taken.
    (script,) = config["script"]
    assert script["when"] == "exit" and script["script"].endswith("train_globals.py")
    assert script["overrides"] == {"dropout": "0.1"}
    resolved = config["resolved"]
    assert resolved["dropout"] == 0.1 and resolved["batch_size"] == 4
    assert resolved["out_dir"] == "out-small" and resolved["learning_rate"] == 6e-4
    assert resolved["model_args"] == {"vocab_size": 65}  # the rest repeats the globals
    assert "config" not in resolved  # nanoGPT's copy of the globals for logging
    # Run state and the configurator's own variables are not config.
    left = script["left_out"]
    for name in ("iter_num", "t0", "dt", "lr", "lossf", "best_val_loss"):
        assert name not in resolved and left[name] == "bound in a loop or a function"
    for name in ("arg", "key", "val", "attempt", "config_file", "wandb_run_name"):
        assert name not in resolved and left[name] == "not bound by the script"
    assert config["empty_reason"] == ""

    show = run_ledger("show", run.run_id, cwd=repo)
    assert show.returncode == 0, show.stderr
    assert "config    from config file config/small.py (python)" in show.stdout
    assert (
        "config    from script globals of train_globals.py (at exit); overrides --dropout=0.1"
        in show.stdout
    )
    assert "config    dropout = 0.1" in show.stdout


def test_diff_of_one_override_is_one_line(repo: Path) -> None:
    _, a, _ = record(repo, "train_globals.py", "config/small.py", "--dropout=0.0")
    _, b, _ = record(repo, "train_globals.py", "config/small.py", "--dropout=0.1")
    r = run_ledger("diff", a.run_id, b.run_id, cwd=repo)
    assert r.returncode == 0, r.stderr
    lines = [line for line in r.stdout.splitlines() if line.startswith("config")]
    assert lines == ["config  dropout: 0.0 → 0.1"]


def test_absl_flags_after_parsing(repo: Path) -> None:
    _, run, config = record(repo, "train_absl.py", "--learning_rate=0.5", "--optimizer=adam")
    assert run.status == "succeeded"
    (flags,) = config["parsers"]
    assert flags["parser"] == "absl" and flags["argv"] == [
        "--learning_rate=0.5",
        "--optimizer=adam",
    ]
    # The program's flags, defaults included; absl's own (logtostderr, verbosity...) left out.
    assert config["resolved"] == {
        "learning_rate": 0.5,
        "steps": 3,
        "optimizer": "adam",
        "layers": ["64", "64"],
    }
    assert config["script"] == []  # FLAGS is an object, and a parser configured the process


def test_click_group_and_subcommand_params(repo: Path) -> None:
    _, run, config = record(repo, "train_click.py", "--verbose", "train", "--lr", "0.01", "d.txt")
    assert run.status == "succeeded"
    parsers = [(p["parser"], p["name"], p["values"]) for p in config["parsers"]]
    assert parsers == [
        ("click", "train_click.py", {"verbose": True}),
        ("click", "train_click.py train", {"lr": 0.01, "epochs": 3, "data": "d.txt"}),
    ]
    assert config["resolved"] == {"verbose": True, "lr": 0.01, "epochs": 3, "data": "d.txt"}


def test_typer_params(repo: Path) -> None:
    _, run, config = record(repo, "train_typer.py", "--lr", "0.3")
    assert run.status == "succeeded"
    assert [p["parser"] for p in config["parsers"]] == ["typer"]
    assert config["resolved"] == {"lr": 0.3, "name": "baseline", "steps": 2}


def test_fire_class_constructor_and_method_args(repo: Path) -> None:
    _, run, config = record(
        repo, "train_fire.py", "--seed=3", "train", "--lr=0.5", "4", "5", "--extra_k=1"
    )
    assert run.status == "succeeded"
    parsers = [(p["parser"], p["name"], p["values"]) for p in config["parsers"]]
    assert parsers == [
        ("fire", "Trainer", {"seed": 3, "name": "baseline"}),
        ("fire", "Trainer.train", {"lr": 0.5, "epochs": 4, "layers": [5], "extra_k": 1}),
    ]
    # Fire's own flags parser (--trace, --verbose...) is argparse, but not the program's config.
    assert config["argparse"] == []
    assert config["resolved"] == {
        "seed": 3,
        "name": "baseline",
        "lr": 0.5,
        "epochs": 4,
        "layers": [5],
        "extra_k": 1,
    }
    show = run_ledger("show", run.run_id, cwd=repo)
    assert "config    from fire call Trainer.train" in show.stdout


def test_jsonargparse_namespace_with_config_file_and_class_args(repo: Path) -> None:
    _, run, config = record(
        repo, "train_jsonargparse.py", "--config", "config/jsonarg.yaml", "--epochs", "5"
    )
    assert run.status == "succeeded"
    (parsed,) = config["parsers"]
    assert parsed["parser"] == "jsonargparse" and parsed["name"] == "train"
    assert parsed["argv"] == ["--config", "config/jsonarg.yaml", "--epochs", "5"]
    # The namespace as parsed: the file's values, the override, the class's defaults nested.
    assert parsed["values"] == {
        "config": ["config/jsonarg.yaml"],
        "lr": 0.2,
        "epochs": 5,
        "model": {"width": 48, "dropout": 0.0},
    }
    assert config["resolved"]["epochs"] == 5 and config["resolved"]["model"]["dropout"] == 0.0
    assert config["argparse"] == []  # its inner argparse parses are not captured again


def test_ml_collections_config_dicts_in_globals(repo: Path) -> None:
    _, run, config = record(repo, "train_configdict.py")
    assert run.status == "succeeded"
    (script,) = config["script"]
    assert script["typed"] == {"config": "ml_collections", "frozen": "ml_collections"}
    assert config["resolved"] == {
        "config": {"lr": 0.05, "model": {"width": 64, "depth": 2, "head": 16}},
        "frozen": {"seed": 7, "tags": ["a", "b"]},
    }


def test_ml_collections_config_file_flag_through_absl(repo: Path) -> None:
    _, run, config = record(repo, "train_configflags.py", "--config.lr=0.3")
    assert run.status == "succeeded"
    (flags,) = config["parsers"]
    assert flags["parser"] == "absl" and flags["argv"] == ["--config.lr=0.3"]
    assert config["resolved"] == {"config": {"lr": 0.3, "model": {"width": 16}}}


def test_config_objects_built_by_hand(repo: Path) -> None:
    _, run, config = record(repo, "train_objects.py")
    assert run.status == "succeeded"
    (script,) = config["script"]
    assert script["typed"] == {"cfg": "omegaconf", "optim": "dataclass"}
    assert script["left_out"]["table"] == "too large"
    assert config["resolved"] == {
        "cfg": {"model": {"width": 64, "head": 64}, "data": "tiny"},  # interpolation resolved
        "epochs": 2,
        "optim": {"lr": 0.02, "betas": [0.9, 0.95]},
    }


@pytest.mark.torch
@pytest.mark.parametrize(
    ("sig", "saver"), [("SIGKILL", "torch"), ("SIGTERM", "torch"), ("SIGKILL", "ledger")]
)
def test_killed_after_first_checkpoint_keeps_globals(repo: Path, sig: str, saver: str) -> None:
    require_module("torch")
    _, run, config = record(repo, "train_killed.py", sig, saver)
    assert run.status == "killed"
    (script,) = config["script"]
    assert script["when"] == "checkpoint"
    assert config["resolved"] == {
        "learning_rate": 0.003,
        "warmup_iters": 10,
        "kill_with": sig,
        "saver": saver,
    }
    show = run_ledger("show", run.run_id, cwd=repo)
    assert "script globals of train_killed.py (at the first checkpoint save)" in show.stdout


def test_no_config_says_why(repo: Path, tmp_path: Path) -> None:
    (repo / "hello.py").write_text("import sys\n\nprint('hello', sys.argv[1:])\n")
    _, run, config = record(repo, "hello.py", "positional")
    assert config["resolved"] == {}
    why = config["empty_reason"]
    assert why == (
        "no config: no argparse, Hydra, absl or click/typer parser ran; no config file was "
        "named on the command line; no --key=value arguments; __main__ had no plain module "
        "globals"
    )
    show = run_ledger("show", run.run_id, cwd=repo)
    assert f"config    {why}" in show.stdout
    site = tmp_path / "site"
    r = run_ledger("report", run.run_id, "-o", str(site), cwd=repo)
    assert r.returncode == 0, r.stderr
    page = (site / "runs" / f"{run.run_id}.html").read_text()
    assert f'<p id="config-empty">{why}</p>' in page

    # Not Python at all: the start-up hook never ran, and the reason says so.
    r = run_ledger("record", "--json", "--", "sh", "-c", "echo hi", cwd=repo)
    store = Store.open(repo / ".ledger")
    _, run = load_run(store, json.loads(r.stderr.strip().splitlines()[-1])["run_id"])
    assert run.resolved_config is not None
    why = store.get_json(run.resolved_config)["empty_reason"]
    assert why.endswith(
        "no Python process ran to its end or to a checkpoint save with ledger's start-up hook "
        "(a program that is not Python, run with python -I or -S, or killed before)"
    )


def test_config_files_of_every_text_kind_named_on_the_command_line(repo: Path) -> None:
    files = {
        "c.yaml": "model:\n  width: 8\n",
        "c.json": '{"seed": 3}',
        "c.toml": "[optim]\nlr = 0.5\n",
        "c.cfg": "[data]\npath = tiny\n",
        "c.ini": "[train]\nepochs = 2\npassword = hunter2hunter2\n",
        "bad.json": "{not json",
    }
    for name, text in files.items():
        (repo / name).write_text(text)  # untracked, as a new config often is
    (repo / "show_args.py").write_text("import sys\n\nprint(sys.argv[1:])\n")
    store, run, config = record(repo, "show_args.py", *files, "--out=c.yaml")
    assert run.status == "succeeded"
    got = {f["path"]: (f["format"], f["value"]) for f in config["files"]}
    assert got == {
        "c.yaml": ("yaml", {"model": {"width": 8}}),
        "c.json": ("json", {"seed": 3}),
        "c.toml": ("toml", {"optim": {"lr": 0.5}}),
        "c.cfg": ("ini", {"data": {"path": "tiny"}}),
        "c.ini": ("ini", {"train": {"epochs": "2", "password": "***redacted***"}}),
    }
    assert config["resolved"]["seed"] == 3 and config["resolved"]["optim"] == {"lr": 0.5}
    # Stored through the secrets boundary, as untracked files are: the secret line is gone.
    ini = next(f for f in config["files"] if f["path"] == "c.ini")
    stored = store.objects.get_bytes(ini["oid"])
    assert b"hunter2hunter2" not in stored and b"epochs = 2" in stored
    # A file that does not parse is named, and the run is recorded all the same.
    assert any(n.startswith("bad.json is named on the command line") for n in run.notes)
