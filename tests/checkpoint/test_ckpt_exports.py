"""``ledger.torch`` exports the checkpoint API without importing torch until it is used."""

from __future__ import annotations

import subprocess
import sys

import pytest
from _support import subprocess_env

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
