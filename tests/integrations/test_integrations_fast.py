"""The adapters without training: import guards, the DDP refusal, pointer files."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _support import REPO, require_component, subprocess_env

from ledger.errors import UsageError


def _need(module: str, what: str, extra: str) -> None:
    require_component(
        importlib.util.find_spec(module), what, f"pip install 'ledger-repro[{extra}]'"
    )


@pytest.mark.parametrize(
    ("module", "cls", "framework", "extra"),
    [
        ("lightning", "LedgerLogger", "lightning", "lightning"),
        ("lightning", "LedgerCallback", "lightning", "lightning"),
        ("hf", "LedgerCallback", "transformers", "hf"),
    ],
)
def test_missing_framework_names_the_extra(
    module: str, cls: str, framework: str, extra: str
) -> None:
    """The module imports without its framework; its classes say which extra installs it."""
    code = (
        f"import sys; sys.modules[{framework!r}] = None\n"
        f"import ledger.integrations.{module} as m\n"
        "try:\n"
        f"    m.{cls}\n"
        "except ImportError as e:\n"
        "    print(e)\n"
        "else:\n"
        "    print('imported')\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], env=subprocess_env(), capture_output=True, text=True, cwd=REPO
    )
    assert r.returncode == 0, r.stderr
    assert f"pip install 'ledger-repro[{extra}]'" in r.stdout, r.stdout


def test_lightning_callback_refuses_ledger_checkpoints_with_several_ranks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Lightning writes checkpoints from rank zero only, so ledger's collective save would wait
    for the other ranks forever: ``setup`` refuses before a step is taken."""
    _need("lightning", "Lightning", "lightning")
    # setup exports RANK for ledger. delenv of an absent variable records nothing to undo, so
    # set it first: monkeypatch then removes it afterwards and later subprocesses lack it.
    monkeypatch.setenv("RANK", "0")
    monkeypatch.delenv("RANK")
    import lightning.pytorch as pl

    from ledger.integrations.lightning import LedgerCallback, LedgerCheckpointIO

    trainer = pl.Trainer(
        accelerator="cpu", devices=2, strategy="ddp", logger=False, enable_progress_bar=False
    )
    assert trainer.world_size == 2
    with pytest.raises(UsageError, match="this Trainer has 2") as e:
        LedgerCallback().setup(trainer, pl.LightningModule(), "fit")
    assert e.value.hint and "checkpoints=False" in e.value.hint
    LedgerCallback(checkpoints=False).setup(trainer, pl.LightningModule(), "fit")
    assert not isinstance(trainer.strategy.checkpoint_io, LedgerCheckpointIO)
    assert os.environ["RANK"] == "0"  # the trainer's global rank, for ledger's runtime


def test_lightning_pointer_is_told_from_a_torch_file(tmp_path: Path) -> None:
    _need("lightning", "Lightning", "lightning")
    import torch

    from ledger.integrations.lightning import POINTER_FORMAT, read_pointer

    pt = tmp_path / "a.ckpt"
    torch.save({"state_dict": {}}, pt)
    assert read_pointer(pt) is None
    assert read_pointer(tmp_path / "missing.ckpt") is None
    (tmp_path / "other.json").write_text('{"format": "something-else"}')
    assert read_pointer(tmp_path / "other.json") is None
    good = tmp_path / "p.ckpt"
    good.write_text(f'{{"format": "{POINTER_FORMAT}", "checkpoint": "b3:00", "step": 1}}')
    assert read_pointer(good) == {"format": POINTER_FORMAT, "checkpoint": "b3:00", "step": 1}


def _hf_dir(root: Path) -> Path:
    folder = root / "out" / "checkpoint-3"
    (folder / "sub").mkdir(parents=True)
    (folder / "trainer_state.json").write_text('{"global_step": 3, "log_history": []}')
    (folder / "model.safetensors").write_bytes(bytes(range(256)) * 10)
    (folder / "sub" / "empty.bin").write_bytes(b"")
    return folder


def test_hf_checkpoint_directory_round_trips_byte_for_byte(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from ledger.integrations._hf_files import capture
    from ledger.integrations.hf import restore_checkpoint
    from ledger.store import Store

    store = Store.init(tmp_path / ".ledger")
    folder = _hf_dir(tmp_path)
    info = capture(folder, step=3, store=store, run_id="hf-run")
    assert info.step == 3 and info.tensors == 3
    back = restore_checkpoint(3, output_dir=tmp_path / "back", run_id="hf-run", store=store)
    assert back == tmp_path / "back" / "checkpoint-3"
    for rel in ("trainer_state.json", "model.safetensors", "sub/empty.bin"):
        assert (back / rel).read_bytes() == (folder / rel).read_bytes(), rel
    assert not [p for p in (tmp_path / "back").iterdir() if p.name.startswith(".")]
    # Restoring again over identical files is a no-op; over different files it refuses.
    assert restore_checkpoint("latest", output_dir=tmp_path / "back", run_id="hf-run", store=store)
    (back / "model.safetensors").write_bytes(b"changed")
    with pytest.raises(UsageError, match="exists and differs") as e:
        restore_checkpoint("latest", output_dir=tmp_path / "back", run_id="hf-run", store=store)
    assert e.value.hint and "another output_dir" in e.value.hint
    assert (back / "model.safetensors").read_bytes() == b"changed"  # left as it was


def test_hf_restore_refuses_other_checkpoints_and_escaping_paths(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from ledger.integrations.hf import restore_checkpoint
    from ledger.store import Store
    from ledger.torch.checkpoint import save_checkpoint

    store = Store.init(tmp_path / ".ledger")
    save_checkpoint({"model": {"w": torch.zeros(2)}}, step=1, store=store, run_id="plain")
    with pytest.raises(UsageError, match="not a transformers Trainer checkpoint"):
        restore_checkpoint(output_dir=tmp_path / "x", run_id="plain", store=store)
    evil = {
        "format": "hf-trainer-checkpoint/1",
        "folder": "checkpoint-1",
        "files": {"../../escaped.txt": torch.zeros(3, dtype=torch.uint8)},
        "trainer_state": None,
    }
    save_checkpoint(evil, step=1, store=store, run_id="evil")
    with pytest.raises(UsageError, match="outside its directory"):
        restore_checkpoint(output_dir=tmp_path / "x", run_id="evil", store=store)
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "x").exists()


def _no_run(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("LEDGER_RUN_ID", "LEDGER_RUN_DIR", "LEDGER_DIR"):
        monkeypatch.delenv(var, raising=False)


def test_lightning_callback_without_a_run_fails_before_training(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Outside ``ledger record``/``ledger.start`` there is no run to save checkpoints to: the
    callback says so in ``setup`` instead of failing at the first checkpoint."""
    _need("lightning", "Lightning", "lightning")
    import lightning.pytorch as pl

    from ledger.integrations.lightning import LedgerCallback

    _no_run(monkeypatch)
    trainer = pl.Trainer(accelerator="cpu", devices=1, logger=False, enable_progress_bar=False)
    with pytest.raises(UsageError, match="has no run to save checkpoints to") as e:
        LedgerCallback().setup(trainer, pl.LightningModule(), "fit")
    assert e.value.hint and "ledger record" in e.value.hint


def test_hf_callback_without_a_run_fails_before_training(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _need("transformers", "transformers", "hf")
    from transformers import TrainerControl, TrainerState, TrainingArguments

    from ledger.integrations.hf import LedgerCallback

    _no_run(monkeypatch)
    args = TrainingArguments(output_dir=str(tmp_path), use_cpu=True, report_to="none")
    with pytest.raises(UsageError, match="has no run to save checkpoints to"):
        LedgerCallback().on_train_begin(args, TrainerState(), TrainerControl())
