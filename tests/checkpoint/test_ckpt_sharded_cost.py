"""The fixed cost of a sharded save whose pieces are mostly unchanged (issue #34's second save
at 4 ranks): each DTensor's local piece is found unchanged by a comparison with the last save
(never hashed again), and the reports go to rank 0 in one ``gather`` and the verdict comes back
in one ``broadcast``: each hop of gloo costs a wake-up of a rank, milliseconds on a busy
machine, and a ring ``all_gather`` (what a save used twice) makes ``world - 1`` of them in a
row. torchrun with 2 ranks (gloo, CPU), a few seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")

pytestmark = [pytest.mark.torch, pytest.mark.slow, pytest.mark.distributed]

ROOT = Path(__file__).resolve().parents[2]
PROG = Path(__file__).with_name("sharded_cost_prog.py")


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Each rank's report of one torchrun at 2 ranks (the program is in the module doc)."""
    return second_save(tmp_path_factory.mktemp("sharded-cost"), 2)


def second_save(tmp_path: Path, ranks: int) -> list[dict[str, Any]]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    for var in ("LEDGER_DIR", "LEDGER_RUN_ID", "LEDGER_RUN_DIR"):
        env.pop(var, None)
    out = tmp_path / "out"
    out.mkdir()
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    done = subprocess.run(
        [*cmd, f"--nproc_per_node={ranks}", str(PROG), str(tmp_path / "store"), str(out)],
        env=env,
        timeout=600,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(ranks)]


def test_a_second_sharded_save_compares_pieces_and_exchanges_once_each(
    reports: list[dict[str, Any]],
) -> None:
    for rank, got in enumerate(reports):
        # One gather of the reports to rank 0, one broadcast of the verdict; nothing else.
        assert got["calls"] == {"gather": 1, "broadcast": 1}, (rank, got["calls"])
        # Every local piece was compared with the last save's; only t2's differed ...
        assert got["compared"] == [
            ["t0", 0, True],
            ["t1", 0, True],
            ["t2", 0, False],
            ["t3", 0, True],
        ], rank
        # ... and it alone was hashed (and written: 128 KiB on each rank).
        assert got["hashed"] == [64 * 512 * 4], rank
        assert got["bytes_new"] == 2 * 64 * 512 * 4  # the checkpoint's, both ranks


def test_a_second_save_takes_each_dtensor_s_box_from_the_first(
    reports: list[dict[str, Any]],
) -> None:
    """Where a DTensor's local piece sits is torch's rule, about 15 us a tensor, paid while a
    background save holds training: a save of the same DTensors again computes none (the old
    code computed all four again)."""
    for rank, got in enumerate(reports):
        assert got["boxes_computed"] == 0, rank


def test_a_second_save_starts_no_thread_of_its_own(reports: list[dict[str, Any]]) -> None:
    """Starting a thread waits until it runs: on a busy machine a wake-up of milliseconds,
    and a save started them one after the other (the old code, in this save: 5 on rank 1,
    11 on rank 0). The helpers of the first save are kept and do the second's work, the
    store's too: rank 0 writes the two ref files' temp copies on the store's kept threads
    (``Store.set_refs``; the old code started two threads of ``ledger.store.repo`` for them
    on every save)."""
    for got in reports:
        assert got["threads_of"] == []


def test_rank_0_checks_its_own_shard_before_the_gather(reports: list[dict[str, Any]]) -> None:
    """Rank 0's shard is on disk before the gather: rank 0 checks it while the others may
    still be writing theirs, and after the gather only theirs (the old code checked all of
    them after the gather, on the way from it to ``latest``)."""
    assert reports[0]["order"] == ["check 0", "gather", "check 1"]
    for got in reports[1:]:
        assert got["order"] == ["gather"]


def test_a_verdict_longer_than_a_slot_takes_a_second_round(
    reports: list[dict[str, Any]],
) -> None:
    for got in reports:
        assert got["long"] == [0, 3000]
        assert got["long_calls"] == {"broadcast": 2}


def test_a_report_longer_than_a_slot_is_refused_before_the_gather(
    reports: list[dict[str, Any]],
) -> None:
    for got in reports:
        assert "does not fit" in got["refused"]
        assert got["refused_calls"] == {}


def test_rank_0_makes_every_shard_manifest_s_name_durable(reports: list[dict[str, Any]]) -> None:
    """Each rank names its shard manifest without waiting for its folder's fsync; rank 0
    fsyncs every rank's manifest folder (while it stages the record) before it publishes: one
    fsync fewer in a row on every rank before the exchange. On the old code each rank
    fsynced its own, and rank 0 never rank 1's."""
    folders = reports[0]["manifest_folders"]
    assert len(folders) == 2
    for folder in folders:
        assert folder in reports[0]["synced"], (folder, reports[0]["synced"])


def test_a_rank_s_long_error_is_cut_to_fit_its_report() -> None:
    """A report goes to rank 0 in one slot; only the error message can outgrow it, and it is
    cut there, saying so (the rank raises from its own exception, which keeps all of it)."""
    from ledger._canonical import canonical_json
    from ledger.torch.checkpoint.collectives import ROOM
    from ledger.torch.checkpoint.save import fit_report

    short = {"rank": 1, "step": 3, "shard": None, "error": "rank 1: disk full", "summary": {}}
    assert fit_report(short) == short
    for char in ("x", "é", '"', "\n"):  # escapes and UTF-8 make a character longer in JSON
        long = {**short, "error": "rank 1: " + char * 10_000}
        cut = fit_report(long)
        assert len(canonical_json(cut)) <= ROOM, char
        assert cut["error"].startswith("rank 1: " + char * 100)
        assert cut["error"].endswith("characters cut)")
        assert {k: v for k, v in cut.items() if k != "error"} == {
            k: v for k, v in short.items() if k != "error"
        }
