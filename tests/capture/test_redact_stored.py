"""End to end: secrets put in env, argv, config files and URLs never reach a stored field."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from ledger.capture.config import (
    build_config_capture,
    collect_capture_notes,
    collect_config_captures,
    load_config_file,
)
from ledger.capture.env import fingerprint
from ledger.store import Store

REPO = Path(__file__).resolve().parents[2]
HOOK_DIR = REPO / "ledger" / "_hook"

SECRETS = {
    "env_token": "envtok-93e1f0",
    "env_numerics": "ncclpw-5521aa",
    "argv_eq": "argveq-77c2",
    "argv_space": "argvsp-18d3",
    "argv_kv": "kvpass-4410",
    "url_pw": "urlpw-0a9b",
    "hf": "hf_" + "Q" * 34,
    "aws": "AKIA" + "Z" * 16,
    "file_key": "filekey-6f6f",
    "file_url": "fileurl-9e9e",
    "bearer": "bearer-c0ffee",
}


def test_no_secret_in_any_stored_field(tmp_path: Path, store: Store) -> None:
    s = SECRETS
    config = tmp_path / "train.yaml"
    config.write_text(
        textwrap.dedent(
            f"""\
            optim: {{lr: 0.1}}
            hub:
              token: {s["file_key"]}
            data_url: s3://user:{s["file_url"]}@bucket/x
            note: "uses {s["hf"]}"
            """
        ),
        encoding="utf-8",
    )
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(
            """\
            import argparse
            p = argparse.ArgumentParser(prog="train")
            p.add_argument("--config")
            p.add_argument("--api-key")
            p.add_argument("--secret")
            p.add_argument("--db")
            p.add_argument("--header")
            p.add_argument("extra", nargs="*")
            p.parse_args()
            """
        ),
        encoding="utf-8",
    )
    argv = [
        sys.executable,
        str(script),
        "--config",
        str(config),
        f"--api-key={s['argv_eq']}",
        "--secret",
        s["argv_space"],
        "--db",
        f"postgres://admin:{s['url_pw']}@db/x",
        "--header",
        f"Authorization: Bearer {s['bearer']}",
        f"password={s['argv_kv']}",
        s["aws"],
    ]
    run_dir = tmp_path / "run"
    child_env = {
        **os.environ,
        "PYTHONPATH": str(HOOK_DIR),
        "LEDGER_HOOK_DIR": str(HOOK_DIR),
        "LEDGER_RUN_DIR": str(run_dir),
        "TORCH_DIST_PASSWORD": s["env_numerics"],
        "MY_SERVICE_TOKEN": s["env_token"],
    }
    subprocess.run(argv, env=child_env, check=True, capture_output=True, timeout=60)

    env = fingerprint(extra_env=["MY_*"], environ=child_env)
    cap = build_config_capture(
        argv,
        files=[load_config_file(config, store)],
        argparse=collect_config_captures(run_dir),
        notes=collect_capture_notes(run_dir),
    )
    assert len(cap.argparse) == 1 and cap.notes == []
    assert cap.resolved["optim"] == {"lr": 0.1}  # the non-secret config survives
    assert "MY_SERVICE_TOKEN" in env.determinism.env

    stored = env.canonical().decode() + cap.canonical().decode()
    staged = "".join(p.read_text() for p in (run_dir / "config").iterdir())
    leaked = {k: v for k, v in SECRETS.items() if v in stored or v in staged}
    assert leaked == {}
