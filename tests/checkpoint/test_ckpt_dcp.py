"""DCP interop (issue #34 point 3): a torch.distributed.checkpoint folder imports as a ledger
checkpoint (``ledger checkpoint import-dcp``) and a ledger checkpoint of FSDP2 state exports as
one that ``dcp.load`` reads into an FSDP2 model; both ways bitwise. The ``.metadata`` pickle is
never unpickled in full: a hostile one is refused before anything in it runs."""

from __future__ import annotations

import os
import pickle
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger.store import Store

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
dcp = pytest.importorskip("torch.distributed.checkpoint")

from ledger.errors import UsageError  # noqa: E402
from ledger.torch.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from ledger.torch.checkpoint.common import read_checkpoint  # noqa: E402
from ledger.torch.checkpoint.dcp import import_dcp  # noqa: E402

pytestmark = pytest.mark.torch


def dcp_save(state: dict[str, Any], folder: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dcp.save(state, checkpoint_id=str(folder), no_dist=True)


def dcp_load(state: dict[str, Any], folder: Path, no_dist: bool = True) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dcp.load(state, checkpoint_id=str(folder), no_dist=no_dist)


@pytest.fixture
def one_rank(tmp_path: Path) -> Iterator[None]:
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/pg", rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


def test_import_dcp_stores_the_folder_as_a_checkpoint(
    tmp_path: Path, cli: Callable[..., Any]
) -> None:
    state = {
        "model": {"w": torch.randn(3, 4), "b": torch.arange(5, dtype=torch.bfloat16)},
        "epoch": 3,
        "name": "x",
    }
    dcp_save(state, tmp_path / "dcp")
    store = Store.init(tmp_path / "store")
    r = cli("--ledger", str(store.root), "checkpoint", "import-dcp", str(tmp_path / "dcp"),
            "--run", "r", "--step", "5")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "Imported" in r.stdout and "step 5" in r.stdout
    got = load_checkpoint(store=store, run_id="r")
    assert got.info.step == 5
    assert "imported from the DCP checkpoint" in read_checkpoint(store, got.info.oid).note
    assert got.state["epoch"] == 3 and got.state["name"] == "x"
    for k, v in state["model"].items():  # type: ignore[attr-defined]
        assert torch.equal(got.state["model"][k], v) and got.state["model"][k].dtype == v.dtype


class _Boom:
    """Unpickles to a call of os.system: what a hostile .metadata would do under pickle.load."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> Any:
        return (os.system, (f"touch {self.marker}",))


def test_a_hostile_metadata_is_refused_before_it_runs(tmp_path: Path) -> None:
    dcp_save({"w": torch.ones(2)}, tmp_path / "dcp")
    marker = tmp_path / "pwned"
    meta = tmp_path / "dcp" / ".metadata"
    real = pickle.loads(meta.read_bytes())  # ours, just written: trusted
    real.planner_data = {"w": _Boom(marker)}
    meta.write_bytes(pickle.dumps(real))
    store = Store.init(tmp_path / "store")
    with pytest.raises(UsageError, match=r"posix\.system is not part of DCP metadata"):
        import_dcp(tmp_path / "dcp", store=store, run_id="r")
    assert not marker.exists()
    assert not (store.root / "refs" / "checkpoints").exists() or not any(
        (store.root / "refs" / "checkpoints").iterdir()
    )
    # what DCP itself does with the same folder: pickle.load runs the command
    dcp_load({"w": torch.zeros(2)}, tmp_path / "dcp")
    assert marker.exists()


def test_a_data_file_outside_the_folder_is_refused(tmp_path: Path) -> None:
    dcp_save({"w": torch.ones(2)}, tmp_path / "dcp")
    meta = tmp_path / "dcp" / ".metadata"
    md = pickle.loads(meta.read_bytes())
    for info in md.storage_data.values():
        info.relative_path = "../secret"
    meta.write_bytes(pickle.dumps(md))
    with pytest.raises(UsageError, match="is not a file in the folder"):
        import_dcp(tmp_path / "dcp", store=Store.init(tmp_path / "store"), run_id="r")


def test_fsdp2_checkpoint_round_trips_through_dcp(
    tmp_path: Path, one_rank: None, cli: Callable[..., Any]
) -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (1,))

    def fsdp_model(seed: int) -> Any:
        torch.manual_seed(seed)
        m = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Linear(5, 2))
        fully_shard(m, mesh=mesh)
        return m

    store = Store.init(tmp_path / "store")
    model = fsdp_model(0)
    save_checkpoint({"model": model}, step=1, store=store, run_id="r")
    want = {k: v.full_tensor().clone() for k, v in model.state_dict().items()}
    # ledger -> DCP: dcp.load into another FSDP2 model
    r = cli("--ledger", str(store.root), "checkpoint", "export", "r", "--format", "dcp",
            "--out", str(tmp_path / "dcp"))  # fmt: skip
    assert r.exit_code == 0, r.output
    other = fsdp_model(1)
    sd = {"model": other.state_dict()}
    dcp_load(sd, tmp_path / "dcp", no_dist=False)
    other.load_state_dict(sd["model"])
    for k, v in other.state_dict().items():
        assert torch.equal(v.full_tensor(), want[k])
    # DCP (written by DCP from FSDP2 state) -> ledger
    dcp_save({"model": other.state_dict()}, tmp_path / "dcp2")
    info = import_dcp(tmp_path / "dcp2", step=2, store=store, run_id="r")
    got = load_checkpoint(info.oid, store=store)
    for k, v in want.items():
        assert torch.equal(got.state["model"][k], v)


def test_export_refuses_an_existing_folder(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "store")
    save_checkpoint({"w": torch.ones(2)}, step=1, store=store, run_id="r")
    (tmp_path / "out").mkdir()
    from ledger.torch.checkpoint import export_checkpoint

    with pytest.raises(UsageError, match="exists"):
        export_checkpoint("r", fmt="dcp", out=tmp_path / "out", store=store)
    assert list((tmp_path / "out").iterdir()) == []
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
