"""A small real ledger for the read API, export and curation tests: four runs recorded by
``ledger record`` (argparse params, two metrics parsed from stdout), a failed one, and a
replay with its verdict."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from _support import run_ledger

TRAIN = """
import argparse, os, sys
p = argparse.ArgumentParser()
p.add_argument("--lr", type=float, default=0.1)
p.add_argument("--seed", type=int, default=1)
a = p.parse_args()
os.makedirs("out", exist_ok=True)
for step in range(4):
    loss = a.lr * (4 - step) + a.seed / 100
    print(f"step {step} loss {loss:.4f} acc {0.5 + step / 10 + a.seed / 1000:.4f}", flush=True)
open("out/model.txt", "w").write(f"weights {a.lr} {a.seed}\\n")
sys.exit(int(os.environ.get("EXIT_CODE", "0")))
"""
METRIC = r"step (?P<step>\d+) loss (?P<loss>\S+) acc (?P<acc>\S+)"


def git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)


def ledger_ok(*args: str, cwd: Path, code: int = 0, **env: str) -> str:
    r = run_ledger(*args, cwd=cwd, **env)
    assert r.returncode == code, r.stdout + r.stderr
    return r.stdout


def build(repo: Path) -> dict[str, str]:
    """The project and its runs: ids ``a`` (lr 0.1 seed 1, tag team=x), ``b`` (lr 0.01 seed
    2), ``failed`` (exit 3) and ``replay`` (of ``a``)."""
    repo.mkdir(parents=True)
    (repo / "train.py").write_text(TRAIN)
    (repo / ".gitignore").write_text("out/\n.ledger/\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    ledger_ok("init", cwd=repo)
    common = ["-o", "out", "-m", METRIC]
    rec = ["record", *common]
    ledger_ok(*rec, "-n", "sweep", "-t", "team=x", "--", "python", "train.py", cwd=repo)
    ledger_ok(
        *rec, "-n", "sweep", "--", "python", "train.py", "--lr", "0.01", "--seed", "2", cwd=repo
    )
    ledger_ok(*rec, "-n", "broken", "--", "python", "train.py", cwd=repo, code=3, EXIT_CODE="3")
    runs = ls(repo)
    by = {(r["name"], r["status"]): r["run_id"] for r in runs}
    a = min(r["run_id"] for r in runs if r["name"] == "sweep")
    b = max(r["run_id"] for r in runs if r["name"] == "sweep")
    ledger_ok("replay", a, cwd=repo)
    (replay,) = [r["run_id"] for r in ls(repo) if r.get("replay_of") == a]
    return {"a": a, "b": b, "failed": by[("broken", "failed")], "replay": replay}


def ls(repo: Path, *extra: str, replays: bool = True) -> list[dict[str, Any]]:
    more = ["--replays"] if replays else []
    out: list[dict[str, Any]] = json.loads(ledger_ok("ls", *more, "--json", *extra, cwd=repo))
    return out


def log_lines(repo: Path) -> list[dict[str, Any]]:
    text = (repo / ".ledger" / "log" / "chain.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]
