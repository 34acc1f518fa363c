"""bench.in_turn: the sides of a comparison run in an order that turns from round to round,
each after a sync, so no side always meets the disk after the others' writes (the host's write
budget, bench/__init__.py)."""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable

import pytest

import bench
from bench import in_turn, turn_order


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 9])
def test_every_two_rounds_each_side_runs_before_each_other_once(n: int) -> None:
    for pair in range(2 * n):
        orders = [turn_order(r, n) for r in (2 * pair, 2 * pair + 1)]
        for order in orders:
            assert sorted(order) == list(range(n))
        for i, j in itertools.permutations(range(n), 2):
            before = sum(o.index(i) < o.index(j) for o in orders)
            assert before == 1, (n, pair, i, j, orders)
        for i in range(n):  # mean position: the middle
            assert sum(o.index(i) for o in orders) == n - 1


def test_two_sides_alternate_and_every_side_comes_first() -> None:
    assert [turn_order(r, 2) for r in range(4)] == [[0, 1], [1, 0], [0, 1], [1, 0]]
    for n in (3, 4, 9):
        firsts = {turn_order(r, n)[0] for r in range(2 * n)}
        assert firsts == set(range(n)), n


def test_turn_order_refuses_nonsense() -> None:
    with pytest.raises(ValueError, match="n >= 1"):
        turn_order(0, 0)
    with pytest.raises(ValueError, match="round >= 0"):
        turn_order(-1, 2)


def test_in_turn_syncs_before_each_side_and_returns_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log: list[str] = []
    monkeypatch.setattr(os, "sync", lambda: log.append("sync"))

    def side(name: str) -> Callable[[], str]:
        def go() -> str:
            log.append(name)
            return name.upper()

        return go

    sides = {"a": side("a"), "b": side("b"), "c": side("c")}
    for r in range(4):
        log.clear()
        got = in_turn(r, sides)
        assert list(got.items()) == [("a", "A"), ("b", "B"), ("c", "C")]
        names = "abc"
        assert log == [x for i in turn_order(r, 3) for x in ("sync", names[i])]
    log.clear()
    in_turn(0, sides, sync=False)
    assert "sync" not in log


def test_rest_deletes_syncs_and_waits(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    from pathlib import Path

    done = Path(str(tmp_path)) / "done"
    (done / "x").mkdir(parents=True)
    calls: list[object] = []
    monkeypatch.setattr(os, "sync", lambda: calls.append("sync"))
    monkeypatch.setattr(time, "sleep", lambda s: calls.append(s))
    bench.rest(done, seconds=3)
    assert not done.exists()
    assert calls == ["sync", 3]


@pytest.mark.torch
def test_first_background_save_and_torch_save_take_turns(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    """The first-background row timed torch.save+fsync always after the save's 400 MB, on
    the disk those writes spent: its ratio flattered the save. Now the two take turns."""
    from pathlib import Path

    pytest.importorskip("torch")
    import ledger.torch.checkpoint as ckpt
    from bench import bench_checkpoint as bc

    log: list[str] = []

    class Tensor:
        def add_(self, _x: float) -> None:
            log.append("train")

    class Pending:
        def wait(self) -> None:
            log.append("bg-written")

    def save(*_a: object, **kw: object) -> Pending:
        assert kw["background"] is True
        log.append("bg-save")
        return Pending()

    monkeypatch.setattr(os, "sync", lambda: log.append("sync"))
    monkeypatch.setattr(ckpt, "save_checkpoint", save)
    monkeypatch.setattr(bc, "_torch_save", lambda _s, _p: log.append("torch-save"))
    monkeypatch.setattr(
        bc, "_state", lambda _n, seed=0: {f"layer{i}.weight": Tensor() for i in range(50)}
    )
    train = ["train"] * 5  # 10% of the 50 tensors change while the save writes
    bg = ["sync", "bg-save", *train, "bg-written"]
    torch_save = ["sync", "torch-save"]
    for r in range(4):
        log.clear()
        work = Path(str(tmp_path)) / f"w{r}"
        work.mkdir()
        got = bc._first_background(1000, work, r)
        assert set(got) == {"blocked", "torch_save"}
        assert log == (bg + torch_save if r % 2 == 0 else torch_save + bg), r


@pytest.mark.torch
def test_the_format_floor_hashes_the_changed_and_makes_record_log_and_ref_durable_in_turn(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    """``_FormatFloor`` (the bench's "format's floor") is the floor plus what ledger's format
    adds: only the changed tensor hashed and written again, then after the manifest's name the
    record's name, a log line and the ref, each made durable before the next."""
    from pathlib import Path

    torch = pytest.importorskip("torch")
    from bench import bench_checkpoint as bc

    state = {f"t{i}": torch.full((1024,), float(i)) for i in range(4)}
    folder = Path(str(tmp_path)) / "floor"
    floor = bc._FormatFloor(folder, state)
    hashed: list[float] = []
    waits: list[str] = []
    from ledger.store import atomic

    real_path, real_fdatasync = atomic.fsync_dir, os.fdatasync

    def fsync_path(p: Path) -> None:
        waits.append(p.name)
        real_path(p)

    def fsync_folder() -> None:  # counted as the floor's own folder, not by its name
        waits.append("floor")
        real_path(folder)

    def fdatasync(fd: int) -> None:
        waits.append("log")
        real_fdatasync(fd)

    monkeypatch.setattr(floor, "_hash", lambda t: hashed.append(float(t[0])))
    monkeypatch.setattr(atomic, "fsync_dir", fsync_path)
    monkeypatch.setattr(floor, "_fsync_folder", fsync_folder)
    monkeypatch.setattr(os, "fdatasync", fdatasync)
    try:
        state["t2"].add_(10.0)
        assert floor.save(state) > 0
    finally:
        floor.close()
    assert hashed == [12.0]  # the changed tensor, and no other
    assert sorted(p.name for p in folder.glob("t*.*")) == ["t0.1", "t1.1", "t2.2", "t3.1"]
    # The data's names with the contents (one folder fsync among the file fsyncs), then the
    # manifest's name, the record's, the log line, the ref: one after the other.
    assert waits == ["floor", "floor", "records", "log", "refs"]
    assert (folder / "records" / "record.2").is_file()
    assert (folder / "refs" / "latest").read_bytes() == b"2\n"
    assert (folder / "log").read_bytes().count(b"\n") == 2  # the rebase's line, then this one
