"""Two ranks (torchrun, gloo): each resumes from its own shard; a rank that cannot save makes
every rank fail the save, none waits forever and nothing is published; one process cannot
resume the two-rank checkpoint but can warm-start from rank 0's shard.

Pinned because mutation testing (issue #18) found these paths untested: the other ranks learn
of a failure from the gathered reports, and rank 0's verdict is raised on every rank.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ledger.errors import UsageError
from ledger.store import Store

pytest.importorskip("torch")

from ledger.torch.checkpoint import load_checkpoint

pytestmark = [pytest.mark.torch, pytest.mark.slow, pytest.mark.distributed]

ROOT = Path(__file__).resolve().parents[2]

PROG = textwrap.dedent(
    """\
    import json
    import sys

    import torch
    import torch.distributed as dist

    from ledger.torch.checkpoint import load_checkpoint, save_checkpoint

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    state = {"w": torch.zeros(3) + rank}
    save_checkpoint(state, step=1, store=sys.argv[1], run_id="r")
    loaded = load_checkpoint(state={"w": None}, store=sys.argv[1], run_id="r")
    outcome = {"rank": rank, "loaded": loaded.state["w"].tolist(), "shard": loaded.shard_rank}
    if rank == 1:
        state["bad"] = object()  # not storable: this rank's save fails before writing
    try:
        save_checkpoint(state, step=2, store=sys.argv[1], run_id="r")
        outcome["error"] = None
    except Exception as e:
        outcome.update(type=type(e).__name__, error=str(e))
    with open(f"{sys.argv[2]}/rank{rank}.json", "w") as f:
        json.dump(outcome, f)
    dist.destroy_process_group()
    """
)


def test_a_failing_rank_fails_the_save_on_every_rank(tmp_path: Path) -> None:
    store = Store.init(tmp_path / ".ledger")
    prog = tmp_path / "prog.py"
    prog.write_text(PROG)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    for var in ("LEDGER_DIR", "LEDGER_RUN_ID", "LEDGER_RUN_DIR"):
        env.pop(var, None)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    subprocess.run(
        [*cmd, str(prog), str(store.root), str(tmp_path)],
        env=env,
        check=True,
        timeout=120,
        capture_output=True,
    )
    outcomes = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    for rank, outcome in enumerate(outcomes):
        # step 1: each rank resumed from its own shard
        assert (outcome["shard"], outcome["loaded"]) == (rank, [float(rank)] * 3)
        # step 2: rank 1 failed, and every rank was told
        assert outcome["type"] == "IntegrityError"
        assert outcome["error"].startswith(
            "checkpoint step 2 was not published: rank 1: cannot checkpoint the builtins.object"
        )
    assert store.refs.names("checkpoints/") == ["checkpoints/r/latest", "checkpoints/r/step-1"]
    # One process cannot resume a two-rank checkpoint; it can take rank 0's weights.
    latest = store.refs.get("checkpoints/r/latest") or ""
    with pytest.raises(UsageError, match="was saved by 2 rank") as e:
        load_checkpoint(store=store, run_id="r")
    assert str(e.value).startswith(
        f"checkpoint {latest[:15]}… was saved by 2 rank(s); this job has 1"
    )
    warm = load_checkpoint(store=store, run_id="r", mode="warm-start")
    assert warm.shard_rank == 0
    assert warm.state["w"].tolist() == [0.0, 0.0, 0.0]
