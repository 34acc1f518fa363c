"""DataLoader worker RNG states in traces (``Trace.loader``): a real 2-worker DataLoader whose
samples carry NumPy noise, recorded and replayed by the real recorder. A worker seeded from
the OS in the replay is named, at the first step whose batch it made; the same program
replayed as recorded names nothing; the batches are those the loader gives untraced."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from _support import init_ledger, run_ledger

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("workers") / "proj"
    root.mkdir()
    shutil.copy(HERE / "train_workers.py", root / "train_workers.py")
    (root / ".gitignore").write_text(".ledger/\n")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e")
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, check=True, env=env)
    init_ledger(root)
    r = run_ledger("record", "--json", "--", sys.executable, "train_workers.py", cwd=root)
    assert r.returncode == 0, r.stderr
    return root, json.loads(r.stderr.strip().splitlines()[-1])["run_id"]


def _replay(root: Path, run_id: str, **env: str) -> tuple[int, dict[str, Any]]:
    r = run_ledger("replay", run_id, "--json", cwd=root, **env)
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, json.loads(r.stdout[r.stdout.index("{\n") :])


def test_an_unseeded_worker_is_named(recorded: tuple[Path, str]) -> None:
    code, verdict = _replay(*recorded, T_UNSEEDED_WORKER="1")
    assert code == 1
    loc = verdict["settings"]["localization"]
    # Batches go round-robin: step 1's batch is worker 1's first.
    assert (loc["step"], loc["phase"], loc["cause"], loc["workers"]) == (
        1,
        "data",
        "worker-seeding",
        ["1"],
    )
    assert loc["line"] == (
        "step 1: batch differs (same sample ids); worker 1 RNG state differs (numpy) → data "
        "loader worker seeding"
    )
    assert loc["doc"].endswith("#worker-seeding")


def test_the_same_program_names_nothing_and_traces_each_worker(
    recorded: tuple[Path, str],
) -> None:
    root, run_id = recorded
    code, verdict = _replay(root, run_id)
    assert code == 0 and verdict["outcome"] == "reproduced", verdict["summary"]
    assert "localization" not in verdict["settings"]
    from ledger.replay.localize import load_traces
    from ledger.run.find import load_run
    from ledger.store import Store

    store = Store.open(root / ".ledger")
    steps = load_traces(store, load_run(store, run_id)[1])[0]["steps"]
    assert [sorted(s["workers"]) for s in steps] == [["0"], ["1"], ["0"], ["1"]]
    assert set(steps[1]["workers"]["1"]) >= {"torch", "python", "numpy"}


class _Squares(torch.utils.data.Dataset):  # type: ignore[misc]
    def __len__(self) -> int:
        return 12

    def __getitem__(self, i: int) -> Any:
        return i, torch.rand(3)  # the worker's torch generator: base_seed + id


def test_the_loader_gives_the_same_batches_traced_or_not() -> None:
    from ledger.torch import trace

    def batches(traced: bool) -> list[Any]:
        loader = torch.utils.data.DataLoader(
            _Squares(), batch_size=2, num_workers=2, generator=torch.Generator().manual_seed(3)
        )
        model = torch.nn.Linear(3, 1)
        tr = trace(model, every=1)
        got = []
        for ids, x in tr.loader(loader) if traced else loader:
            tr.batch(x, ids=ids)
            model(x)
            got.append((ids.tolist(), x.tolist()))
        tr.close()
        return got

    before = set(os.listdir(tempfile.gettempdir()))
    assert batches(traced=True) == batches(traced=False)
    left = {p for p in set(os.listdir(tempfile.gettempdir())) - before if "ledger-workers" in p}
    assert not left  # the workers' directory of each pass is removed with it
