"""``ledger.torch`` exports the checkpoint API without importing torch until it is used."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _support import run_ledger, subprocess_env

pytestmark = pytest.mark.torch

CHECKPOINT_NAMES = [
    "CheckpointInfo",
    "LoadedCheckpoint",
    "ResumableSampler",
    "export_checkpoint",
    "import_legacy",
    "list_checkpoints",
    "load_checkpoint",
    "save_checkpoint",
]


def test_checkpoint_names_are_lazy_and_resolve() -> None:
    script = (
        "import sys\n"
        "import ledger.torch as lt\n"
        "assert 'torch' not in sys.modules, 'import ledger.torch imported torch'\n"
        f"names = {CHECKPOINT_NAMES!r}\n"
        "assert set(names) <= set(lt.__all__) and set(names) <= set(dir(lt))\n"
        "import ledger.torch.checkpoint as c\n"
        "for n in names:\n"
        "    assert getattr(lt, n) is getattr(c, n), n\n"
        "from ledger.torch import save_checkpoint\n"
        "assert save_checkpoint is c.save_checkpoint\n"
        "try:\n"
        "    lt.no_such_name\n"
        "except AttributeError as e:\n"
        "    assert 'no_such_name' in str(e)\n"
        "else:\n"
        "    raise AssertionError('unknown name resolved')\n"
        "print('ok')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0 and out.stdout == "ok\n", out.stderr


def test_every_name_in_all_exists() -> None:
    import ledger.torch as lt

    for name in lt.__all__:
        assert hasattr(lt, name), name


def test_listing_a_runs_checkpoints_imports_no_torch(tmp_path: Path) -> None:
    """``ledger checkpoints RUN`` reads records only: it imports neither torch nor numpy (it
    took 3.2 s of CPU against 0.4 s for ``ledger ls`` while the checkpoint package imported
    every submodule, saving and loading among them). Exporting one still works."""
    import torch

    from ledger.store import Store
    from ledger.torch.checkpoint import save_checkpoint

    store = Store.init(tmp_path / ".ledger")
    for step in (1, 2):
        save_checkpoint({"w": torch.full((4,), float(step))}, step=step, store=store, run_id="r1")
    ledger = str(store.root)
    for argv in (
        ["checkpoints", "r1", "-L", ledger],
        ["checkpoints", "r1", "--json", "-L", ledger],
    ):
        r = run_ledger(*argv, cwd=tmp_path, PYTHONPROFILEIMPORTTIME="1")
        assert r.returncode == 0, r.stderr
        imported = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s+(\S+)$", r.stderr, re.M))
        assert "ledger.torch.checkpoint.export" in imported  # the timings did apply
        top = {name.split(".")[0] for name in imported}
        assert not top & {"torch", "numpy"}, sorted(top & {"torch", "numpy"})
    assert [row["step"] for row in json.loads(r.stdout)] == [1, 2]
    out = tmp_path / "w.pt"
    r = run_ledger(
        "checkpoint", "export", "r1", "-f", "pt", "-o", str(out), "-L", ledger, cwd=tmp_path
    )
    assert r.returncode == 0, r.stderr
    assert torch.load(out, weights_only=True)["w"].tolist() == [2.0] * 4
