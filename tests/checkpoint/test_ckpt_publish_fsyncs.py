"""What rank 0 fsyncs between the ranks' reports and the record's name (``save._stage_record``,
docs/format.md "Publishing a checkpoint", step 3), and what a staged object tells about the
folders it made (``write.StagedObject``). Each fsync in a row there is one more journal commit
on the way to ``latest``; none of the durability the format asks for may go.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from ledger._hashing import hash_bytes  # noqa: E402
from ledger.store import Store  # noqa: E402
from ledger.torch.checkpoint import save as ckpt_save  # noqa: E402
from ledger.torch.checkpoint import save_checkpoint  # noqa: E402
from ledger.torch.checkpoint import write as ckpt_write  # noqa: E402
from ledger.torch.checkpoint.common import read_checkpoint  # noqa: E402

pytestmark = [pytest.mark.torch]


def _reports(store: Store, made: Any) -> list[dict[str, Any]]:
    """A one-rank save's report of step 1, as rank 0 gets it (``made``: its ``made_folder``,
    or ``...`` for a report without one)."""
    info = save_checkpoint({"w": torch.arange(4096.0)}, step=1, store=store, run_id="r")
    shard = read_checkpoint(store, info.oid).shards[0]
    report = {
        "rank": 0,
        "step": 1,
        "shard": shard.manifest,
        "error": None,
        "summary": {
            "tensors": shard.tensors,
            "bytes_total": shard.bytes_total,
            "bytes_new": shard.bytes_new,
        },
    }
    if made is not ...:
        report["made_folder"] = made
    return [report]


def _spied(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Events in order: ("write", "") a staged object's content written, ("dir", path) a
    folder fsync started, ("file", path) a file fsync done."""
    events: list[tuple[str, str]] = []
    write, fsync_dir, fsync = ckpt_write._write_buffered, ckpt_write.fsync_dir, os.fsync

    def spy_write(*a: Any) -> None:
        write(*a)
        events.append(("write", ""))

    def spy_dir(path: Path) -> None:
        events.append(("dir", str(path)))
        fsync_dir(path)

    def spy_fsync(fd: int) -> None:
        fsync(fd)
        events.append(("file", os.readlink(f"/proc/self/fd/{fd}")))

    monkeypatch.setattr(ckpt_write, "_write_buffered", spy_write)
    monkeypatch.setattr(ckpt_write, "fsync_dir", spy_dir)
    monkeypatch.setattr(os, "fsync", spy_fsync)
    return events


@pytest.mark.parametrize("made", [False, True, ...], ids=["kept", "made", "unsaid"])
def test_the_folder_above_a_manifest_s_is_fsynced_only_when_a_rank_made_it(
    store: Store, monkeypatch: pytest.MonkeyPatch, made: Any
) -> None:
    """A shard manifest named into a folder that was there changed only that folder; the one
    above changed when the rank made the folder (the old code fsynced it on every save). A
    report that does not say counts as made."""
    reports = _reports(store, made)
    fan = store.objects.path_of(reports[0]["shard"]).parent
    events = _spied(monkeypatch)
    staged, checked = ckpt_save._stage_record(store, reports, "r", 1, 1, "")
    try:
        assert staged is not None and len(checked) == 1
        folders = [path for kind, path in events if kind == "dir"]
        want = [str(fan.parent), str(fan)] if made is not False else [str(fan)]
        assert sorted(folders) == want
    finally:
        if staged is not None:
            staged[1].discard()


def test_the_record_is_written_before_the_folders_are_fsynced(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record's content is in its temp file before any of the manifests' folders is
    fsynced, so that the journal commit those fsyncs start holds it too (the old code wrote it
    on a thread beside them: often after a commit had begun, which took a second one); it is
    durable before ``_stage_record`` returns, and named only after (``_publish``)."""
    reports = _reports(store, False)
    events = _spied(monkeypatch)
    staged, _checked = ckpt_save._stage_record(store, reports, "r", 1, 1, "")
    try:
        assert staged is not None
        kinds = [kind for kind, _path in events]
        assert kinds.index("write") < kinds.index("dir"), events
        assert "file" in kinds[kinds.index("write") :], events  # its content fsynced
        assert not store.objects.has(staged[1].oid)  # not named yet
        assert staged[1].name()
        assert store.objects.has(staged[1].oid)
    finally:
        if staged is not None:
            staged[1].discard()


def test_a_staged_object_says_whether_it_made_its_folder(store: Store) -> None:
    first, second = b'{"a":1}', b'{"a":2}'
    made = ckpt_write.StagedObject(store.objects, first)
    assert made.name(durable=False)
    assert made.made_folder  # a new ledger: its fan folder was not there
    store.objects.path_of(hash_bytes(second)).parent.mkdir(parents=True, exist_ok=True)
    kept = ckpt_write.StagedObject(store.objects, second)
    assert kept.name(durable=False)
    assert not kept.made_folder


def test_a_staged_object_is_named_only_once_its_content_is_durable(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sync=False`` writes the content without fsyncing it; naming it before ``sync`` is a
    programming error, refused, and leaves no object and no temp file behind."""
    synced: list[int] = []
    fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append(fd)
        fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    early = ckpt_write.StagedObject(store.objects, b'{"b":1}', sync=False)
    assert synced == []
    with pytest.raises(RuntimeError, match="durable"):
        early.name()
    assert not store.objects.has(early.oid)
    assert not [p for p in store.tmp_dir.iterdir() if p.name.startswith("obj-")]
    staged = ckpt_write.StagedObject(store.objects, b'{"b":2}', sync=False)
    staged.sync()
    assert len(synced) == 1
    staged.sync()  # once durable, nothing more to do
    assert len(synced) == 1
    assert staged.name()
    assert store.objects.has(staged.oid)


def test_a_rank_writes_its_manifest_before_the_chunk_folders_are_fsynced(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shard manifest's content (and, alone, the record's) is in its temp file before the
    first fsync of a new chunk's folder starts, and fsynced beside those (the old code wrote it
    while they ran: often after their commit had begun, which took a second one)."""
    events: list[str] = []
    init, fsync_dir = ckpt_write.StagedObject.__init__, ckpt_write.fsync_dir

    def spy_init(self: Any, *a: Any, **k: Any) -> None:
        init(self, *a, **k)
        events.append("staged")

    def spy_dir(path: Path) -> None:
        events.append("dir")
        fsync_dir(path)

    monkeypatch.setattr(ckpt_write.StagedObject, "__init__", spy_init)
    monkeypatch.setattr(ckpt_write, "fsync_dir", spy_dir)
    g = torch.Generator().manual_seed(0)
    state = {"a": torch.randn(1 << 15, generator=g), "b": torch.randn(1 << 15, generator=g)}
    info = save_checkpoint(state, step=1, store=store, run_id="r")
    assert info.bytes_new == 2 * (1 << 17)
    assert events[:2] == ["staged", "staged"], events  # the manifest, then the record
    assert "dir" in events, events


def test_rank_0_s_shard_checked_before_the_gather_is_not_checked_again(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``own`` (rank 0's shard as rank 0 checked it before the gather) stands for rank 0's
    check only when its report names that very manifest; any other is checked as before."""
    reports = _reports(store, False)
    own = ckpt_save._check_shard(store, reports[0]["shard"], "r", 1, 0, 1)
    calls: list[str] = []
    check = ckpt_save._check_shard

    def spy(*a: Any) -> Any:
        calls.append(a[1])
        return check(*a)

    monkeypatch.setattr(ckpt_save, "_check_shard", spy)
    staged, checked = ckpt_save._stage_record(store, reports, "r", 1, 1, "", own)
    assert staged is not None
    staged[1].discard()
    assert calls == [] and checked == [own]
    other = (own[0].model_copy(update={"manifest": "b3:" + "0" * 64}), own[1])
    staged, checked = ckpt_save._stage_record(store, reports, "r", 1, 1, "", other)
    assert staged is not None
    staged[1].discard()
    assert calls == [reports[0]["shard"]] and checked[0][0].manifest == reports[0]["shard"]


def _meet(names: tuple[str, str], timeout: float = 10.0) -> tuple[Any, list[str]]:
    """A rendezvous of two kinds of call: ``arrive(name)`` returns once a call of the other
    kind has arrived too, or after ``timeout`` s (a call the other never meets, as when the
    two run one after the other), which is listed in the second value."""
    came = {n: threading.Event() for n in names}
    missed: list[str] = []

    def arrive(name: str) -> None:
        came[name].set()
        other = names[1] if name == names[0] else names[0]
        if not came[other].wait(timeout):
            missed.append(name)

    return arrive, missed


def test_one_process_stages_its_ref_files_beside_the_record(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Alone, a save stages the temp copies of ``step-<n>`` and ``latest`` (``Store.stage_ref``)
    as soon as the record's content is known, before the record is named, and ``set_refs``
    renames those very copies: it writes none during the log append (the old code wrote and
    fsynced both there, beside the append's fsync: one more on the way to ``latest``)."""
    from ledger.store import repo

    events: list[str] = []
    stage_ref, fault, made = Store.stage_ref, ckpt_save.fault, repo.StagedRef.__init__

    def spy_stage(self: Store, name: str, oid: str) -> Any:
        events.append(f"stage {name}")
        return stage_ref(self, name, oid)

    def spy_made(self: Any, *a: Any) -> None:
        events.append("copy")
        made(self, *a)

    def spy_fault(phase: str) -> None:
        events.append(phase)
        fault(phase)

    monkeypatch.setattr(Store, "stage_ref", spy_stage)
    monkeypatch.setattr(repo.StagedRef, "__init__", spy_made)
    monkeypatch.setattr(ckpt_save, "fault", spy_fault)
    info = save_checkpoint(
        {"w": torch.arange(1 << 16, dtype=torch.float32)}, step=3, store=store, run_id="r"
    )
    assert events.count("copy") == 2, events  # the two staged copies, no more
    record = events.index("after-record")
    assert events.index("stage checkpoints/r/step-3") < record, events
    assert events.index("stage checkpoints/r/latest") < record, events
    assert store.refs.get("checkpoints/r/latest") == info.oid
    assert store.refs.get("checkpoints/r/step-3") == info.oid
    assert not [p for p in store.tmp_dir.iterdir() if p.name.startswith(".w-")]


def test_one_process_fsyncs_its_manifest_and_record_at_once(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shard manifest's and the record's contents are fsynced at the same time (one after
    the other, the record's blocks were written back by its own fsync: a second commit)."""
    arrive, missed = _meet(("first", "second"))
    sync = ckpt_write.StagedObject.sync
    seen: list[str] = []
    lock = threading.Lock()

    def spy(self: Any) -> None:
        if self._fd is not None and not self._synced:
            with lock:
                name = "first" if not seen else "second"
                seen.append(name)
            arrive(name)
        sync(self)

    monkeypatch.setattr(ckpt_write.StagedObject, "sync", spy)
    save_checkpoint(
        {"w": torch.arange(1 << 16, dtype=torch.float32)}, step=1, store=store, run_id="r"
    )
    assert seen == ["first", "second"] and missed == []


def test_one_process_checks_its_shard_as_written_while_its_chunk_folders_are_fsynced(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check of the shard (it stats its chunks) runs on the manifest as the save wrote it,
    while the chunks' folders are fsynced, before the manifest is named; the manifest is not
    read back, and ``_publish`` does not check it again. (The old code read the named
    manifest back and checked it while the manifest's folder was fsynced: a check that took
    longer than that fsync, on the way to ``latest``.)"""
    arrive, missed = _meet(("fsync", "check"))
    fsync_dir, check = ckpt_write.fsync_dir, getattr(ckpt_save, "_check_manifest", None)
    read = ckpt_save._check_shard
    events: list[str] = []
    _spy_links(monkeypatch, events)

    start, batches = ckpt_write._start_fsyncs, []

    def spy_start(dirs: list[Path]) -> Any:
        batches.append(set(dirs))
        return start(dirs)

    def spy_dir(path: Path) -> None:
        # A chunk's folder: one of the first batch of folder fsyncs. (Told apart by the
        # batch, not by whether the check has begun: on a loaded machine the pool's thread
        # may start its fsync only after the check did, and still overlap it.)
        if path in batches[0]:
            arrive("fsync")
        fsync_dir(path)

    def spy_check(*a: Any) -> Any:
        events.append("check")
        arrive("check")
        return check(*a)

    def spy_read(*a: Any) -> Any:
        events.append("read back")
        return read(*a)

    monkeypatch.setattr(ckpt_write, "_start_fsyncs", spy_start)
    monkeypatch.setattr(ckpt_write, "fsync_dir", spy_dir)
    monkeypatch.setattr(ckpt_save, "_check_manifest", spy_check, raising=False)
    monkeypatch.setattr(ckpt_save, "_check_shard", spy_read)
    info = save_checkpoint(
        {"w": torch.arange(1 << 16, dtype=torch.float32)}, step=1, store=store, run_id="r"
    )
    assert missed == []
    manifest = read_checkpoint(store, info.oid).shards[0].manifest
    names = {f"link {store.objects.path_of(manifest)}": "manifest named"}
    names[f"link {store.objects.path_of(info.oid)}"] = "record named"
    seen = [names.get(e, e) for e in events if not e.startswith("link ") or e in names]
    assert seen == ["check", "manifest named", "record named"], events


def _spy_links(monkeypatch: pytest.MonkeyPatch, events: list[str]) -> None:
    """``link <path>`` in ``events`` as each object of the save's writer gets its name."""
    unnamed, named = ckpt_write.link_unnamed, ckpt_write.link_named

    def spy_unnamed(fd: int, final: Path) -> bool:
        events.append(f"link {final}")
        return unnamed(fd, final)

    def spy_named(tmp: Path, final: Path) -> bool:
        events.append(f"link {final}")
        return named(tmp, final)

    monkeypatch.setattr(ckpt_write, "link_unnamed", spy_unnamed)
    monkeypatch.setattr(ckpt_write, "link_named", spy_named)


def test_a_shard_whose_check_fails_as_written_is_checked_again_and_refused(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check of the shard as written that fails is not the verdict: ``_publish`` reads the
    named manifest back, checks it again and raises what it finds; nothing is published."""
    from ledger.errors import IntegrityError, MissingObjectError

    real, check = ckpt_save._check_shard, getattr(ckpt_save, "_check_manifest", None)
    calls: list[int] = []

    def failing(*a: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:  # as written; the second is the check of the manifest read back
            raise IntegrityError("as written: refused")
        return check(*a)

    read: list[str] = []

    def spy_read(st: Any, oid: str, *a: Any) -> Any:
        read.append(oid)
        st.objects.path_of(st.get_json(oid)["state"]).unlink()  # its skeleton: gone
        return real(st, oid, *a)

    monkeypatch.setattr(ckpt_save, "_check_manifest", failing, raising=False)
    monkeypatch.setattr(ckpt_save, "_check_shard", spy_read)
    with pytest.raises(MissingObjectError, match="state object"):
        save_checkpoint({"w": torch.arange(4096.0)}, step=1, store=store, run_id="r")
    assert len(read) == 1 and len(calls) == 2
    assert store.refs.get("checkpoints/r/latest") is None


def test_a_new_fan_folder_and_the_one_above_are_fsynced_at_once(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An object named into a fan folder it made changed that folder and the one above: both
    are fsynced, at the same time (one after the other, each waited for a commit)."""
    arrive, missed = _meet((str(store.objects.root / "b3"), "fan"))
    fsync_dir = ckpt_write.fsync_dir
    synced: list[str] = []
    top = str(store.objects.root / "b3")

    def spy(path: Path) -> None:
        synced.append(str(path))
        arrive(top if str(path) == top else "fan")
        fsync_dir(path)

    monkeypatch.setattr(ckpt_write, "fsync_dir", spy)
    (store.objects.root / "b3").mkdir(exist_ok=True)  # only the fan folder is new
    staged = ckpt_write.StagedObject(store.objects, b'{"c":1}')
    fan = str(store.objects.path_of(staged.oid).parent)
    assert staged.name()
    assert staged.made_folder
    assert sorted(synced) == sorted([fan, top]) and missed == []


def test_the_ref_lock_is_taken_while_the_record_s_folder_is_fsynced_and_the_append_waits(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the record is named, its folder is fsynced while ``set_refs`` takes the ref lock
    and reads what the log append needs (the log's tail, the ref files); the append, which
    names the record, starts only once that fsync is done. (The old code fsynced the folder
    first, then went into ``set_refs``: one more wait in a row on the way to ``latest``.)"""
    from ledger.store import log as store_log

    arrive, missed = _meet(("record folder", "lock"))
    events: list[str] = []
    record: list[str] = []  # the record's id, as its ref files' temp copies are staged
    stage_ref, fsync_dir = Store.stage_ref, ckpt_write.fsync_dir
    heal, append = Store._finish_cut_writes, store_log.HashLog.append_many

    def spy_stage(self: Store, ref: str, oid: str) -> Any:
        record[:] = [oid]
        return stage_ref(self, ref, oid)

    def spy_dir(path: Path) -> None:
        named = record and f"link {store.objects.path_of(record[0])}" in events
        mine = named and path == store.objects.path_of(record[0]).parent
        if mine:
            arrive("record folder")
        fsync_dir(path)
        if mine:
            events.append("record folder durable")

    def spy_heal(self: Store) -> None:
        if record and f"link {store.objects.path_of(record[0])}" in events:
            events.append("lock")
            arrive("lock")
        heal(self)

    def spy_append(self: Any, entries: Any) -> Any:
        events.append("append")
        return append(self, entries)

    monkeypatch.setattr(Store, "stage_ref", spy_stage)
    _spy_links(monkeypatch, events)
    monkeypatch.setattr(ckpt_write, "fsync_dir", spy_dir)
    monkeypatch.setattr(Store, "_finish_cut_writes", spy_heal)
    monkeypatch.setattr(store_log.HashLog, "append_many", spy_append)
    info = save_checkpoint(
        {"w": torch.arange(1 << 16, dtype=torch.float32)}, step=1, store=store, run_id="r"
    )
    assert record == [info.oid]
    assert missed == []
    assert events.index("lock") < events.index("record folder durable") < events.index("append")
    assert store.refs.get("checkpoints/r/latest") == info.oid
