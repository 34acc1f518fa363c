"""deterministic(): applies and records the settings; determinism_settings() reads them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_SCRIPT = """
import json, torch, ledger.torch as lt
before = lt.determinism_settings()
after = lt.deterministic(threads=1)
print(json.dumps({"diff": lt.determinism_differences(before, after), "after": after.model_dump()}))
"""


def test_deterministic_applies_records_and_reports(tmp_path: Path) -> None:
    # A subprocess: these are process-wide switches we must not leave on in the test process.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("LEDGER_") and k != "CUBLAS_WORKSPACE_CONFIG"
    }
    env.update(PYTHONPATH=str(ROOT), LEDGER_RUN_DIR=str(tmp_path), RANK="1", WORLD_SIZE="2")
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    after = result["after"]
    assert after["deterministic_algorithms"] and after["cudnn_deterministic"]
    assert (
        not after["cudnn_benchmark"]
        and not after["cudnn_allow_tf32"]
        and not after["matmul_allow_tf32"]
    )
    assert (
        after["cublas_workspace_config"] == ":4096:8"
        and after["float32_matmul_precision"] == "highest"
    )
    assert after["num_threads"] == 1
    assert any(d.startswith("deterministic_algorithms: False -> True") for d in result["diff"])
    recorded = json.loads((tmp_path / "determinism" / "rank-1.json").read_text())
    assert recorded == {"rank": 1, "settings": after}


def test_settings_read_without_changing_anything() -> None:
    import torch

    from ledger.torch import determinism_settings

    s = determinism_settings()
    assert s.deterministic_algorithms == torch.are_deterministic_algorithms_enabled()
    assert s.num_threads == torch.get_num_threads()
