"""A default save reuses the id of a chunk whose bytes equal the last save's (checkpoint.reuse), and
never the id of a chunk with one byte changed, however it was changed."""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ledger.store import Store

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from ledger.torch.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from ledger.torch.checkpoint import reuse as ckpt_reuse  # noqa: E402
from ledger.torch.checkpoint.io import write_tensors  # noqa: E402

pytestmark = [
    pytest.mark.torch,
    pytest.mark.skipif(ckpt_reuse.MEMCMP is None, reason="no memcmp to compare with"),
]

N = 40_000  # 160 KB of float32: above ckpt_reuse.MIN_BYTES


@pytest.fixture(autouse=True)
def _fresh_mappings() -> Iterator[None]:
    ckpt_reuse.forget()
    yield
    ckpt_reuse.forget()


def _state() -> dict[str, Any]:
    g = torch.Generator().manual_seed(0)
    model = torch.nn.Linear(200, 200)  # weight: 160 KB
    with torch.no_grad():
        model.weight.copy_(torch.randn(200, 200, generator=g))
        model.weight[0, :4] = torch.tensor([0.0, 1.0, float("nan"), -2.0])
    return {"model": model, "a": torch.randn(N, generator=g), "b": torch.randn(N, generator=g)}


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.detach().contiguous().view(torch.int32)


def _flip_sign_of_zero_via_data(s: dict[str, Any]) -> None:
    s["model"].weight.data[0, 0] = -0.0  # 0.0 == -0.0 as floats; one sign bit apart


def _new_nan_payload(s: dict[str, Any]) -> None:
    w = s["model"].weight.detach().numpy().view(np.uint32)
    w[0, 2] = w[0, 2] ^ 1  # NaN stays NaN (still != itself), its payload differs


def _one_bit_via_numpy(s: dict[str, Any]) -> None:
    s["a"].numpy().view(np.uint8)[N * 4 - 1] ^= 0x01  # the very last byte


def _in_place_op(s: dict[str, Any]) -> None:
    with torch.no_grad():
        s["b"][N // 2].add_(1.0)


def _replaced_parameter(s: dict[str, Any]) -> None:
    w = s["model"].weight
    w.data = w.data.clone()
    w.data[199, 199] = torch.nextafter(w.data[199, 199], torch.tensor(1e9))


CHANGES: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "sign of zero via .data": (_flip_sign_of_zero_via_data, "model/weight"),
    "NaN payload via numpy": (_new_nan_payload, "model/weight"),
    "last byte via numpy": (_one_bit_via_numpy, "a"),
    "in-place op": (_in_place_op, "b"),
    "new storage, one ulp": (_replaced_parameter, "model/weight"),
}


def _tensor_of(state: dict[str, Any], key: str) -> torch.Tensor:
    if key.startswith("model/"):
        model = state["model"]  # a module, or the state dict a load returns
        weights = model if isinstance(model, dict) else model.state_dict()
        w: torch.Tensor = weights[key.split("/", 1)[1]]
        return w
    t: torch.Tensor = state[key]
    return t


@pytest.mark.parametrize("how", list(CHANGES))
@pytest.mark.parametrize("background", [False, True])
def test_a_changed_byte_is_never_reused(store: Store, how: str, background: bool) -> None:
    change, key = CHANGES[how]
    state = _state()
    save_checkpoint(state, step=1, store=store, run_id="r")
    change(state)
    pending = save_checkpoint(state, step=2, store=store, run_id="r", background=background)
    info: Any = pending.wait() if background else pending
    assert info.bytes_new == _tensor_of(state, key).numel() * 4, how  # only that tensor
    loaded = load_checkpoint(store=store, run_id="r").state
    for k in ("model/weight", "model/bias", "a", "b"):
        assert torch.equal(_bits(_tensor_of(loaded, k)), _bits(_tensor_of(state, k))), (how, k)


def test_unchanged_chunks_are_compared_not_hashed(store: Store) -> None:
    g = torch.Generator().manual_seed(1)
    t = torch.randn(4 * N, generator=g)
    chunk = N * 4  # 4 chunks
    tensors = [("t", t), ("small", torch.arange(10.0))]
    _, first = write_tensors(store.objects, tensors, chunk_size=chunk)
    assert first.bytes_new == t.numel() * 4 + 40 and first.bytes_reused == 0
    t.numpy().view(np.uint8)[2 * chunk + 7] ^= 0x80  # one bit of chunk 2
    entries, second = write_tensors(store.objects, tensors, chunk_size=chunk)
    assert second.bytes_reused == 3 * chunk  # chunks 0, 1, 3; tiny tensors are hashed
    assert second.bytes_new == chunk
    back = torch.empty_like(t)
    for j, oid in enumerate(entries[0].chunks):
        back.view(torch.uint8)[j * chunk : (j + 1) * chunk] = torch.frombuffer(
            bytearray(store.objects.get_bytes(oid)), dtype=torch.uint8
        )
    assert torch.equal(back.view(torch.int32), t.view(torch.int32))


def test_a_collected_object_is_written_again_not_reused(store: Store) -> None:
    t = torch.randn(N)
    entries, _ = write_tensors(store.objects, [("t", t)])
    path = store.objects.path_of(entries[0].chunks[0])
    os.unlink(path)  # as `ledger gc` would, between two saves
    _, stats = write_tensors(store.objects, [("t", t)])
    assert stats.bytes_reused == 0 and stats.bytes_new == N * 4
    assert store.objects.get_bytes(entries[0].chunks[0]) == t.numpy().tobytes()


def test_an_object_found_stored_is_trusted_only_after_comparing(store: Store) -> None:
    t = torch.randn(N)
    entries, _ = write_tensors(store.objects, [("t", t)])
    ckpt_reuse.forget()  # a new process: the object is in the store, nothing is mapped
    path = store.objects.path_of(entries[0].chunks[0])
    damaged = bytearray(path.read_bytes())
    damaged[-1] ^= 0xFF  # the file no longer holds the bytes its id names
    os.chmod(path, 0o644)
    path.write_bytes(bytes(damaged))
    _, found = write_tensors(store.objects, [("t", t)])
    assert found.bytes_new == 0  # deduplicated by id, as before
    _, again = write_tensors(store.objects, [("t", t)])
    assert again.bytes_reused == 0  # the damaged file vouches for nothing: hashed again
    if os.path.exists("/proc/self/maps"):  # and the mapping that compared it was closed
        with open("/proc/self/maps") as f:
            assert str(path) not in f.read()


def test_a_ledger_does_not_reuse_another_ledgers_objects(tmp_path: Any) -> None:
    one, two = Store.init(tmp_path / "one"), Store.init(tmp_path / "two")
    t = torch.randn(N)
    write_tensors(one.objects, [("t", t)])
    _, stats = write_tensors(two.objects, [("t", t)])
    assert stats.bytes_new == N * 4 and stats.bytes_reused == 0


def test_compressed_chunks_are_hashed_every_time(store: Store) -> None:
    z = torch.zeros(N)
    write_tensors(store.objects, [("z", z)])
    _, stats = write_tensors(store.objects, [("z", z)])
    assert stats.bytes_reused == 0 and stats.bytes_new == 0


def test_the_payload_offset_is_asked_of_the_object_store(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mapping compares with the bytes from where ``objects.raw_payload_offset`` says the
    content starts (the one place that knows the object file's layout): a raw object's file
    holds its content there, a compressed one has none; a store that said none for a raw
    object gets its chunks hashed again, never compared at a guessed offset."""
    from ledger.store.objects import raw_payload_offset

    t = torch.randn(N)
    (packed,), _ = write_tensors(store.objects, [("z", torch.zeros(N))])
    (raw,), _ = write_tensors(store.objects, [("t", t)])  # (a save maps only its own chunks)
    with open(store.objects.path_of(raw.chunks[0]), "rb") as f:
        at = raw_payload_offset(f.fileno())
        assert at is not None and f.read()[at:] == t.numpy().tobytes()
    with open(store.objects.path_of(packed.chunks[0]), "rb") as f:
        assert raw_payload_offset(f.fileno()) is None
    _, again = write_tensors(store.objects, [("t", t)])
    assert again.bytes_reused == N * 4
    ckpt_reuse.forget()
    monkeypatch.setattr(ckpt_reuse, "raw_payload_offset", lambda fd, oid="": None)
    write_tensors(store.objects, [("t", t)])
    _, hashed = write_tensors(store.objects, [("t", t)])
    assert hashed.bytes_reused == 0


def test_views_and_conjugates_compare_their_resolved_bytes(store: Store) -> None:
    base = torch.randn(200, 200)
    z = torch.complex(base, base)
    tensors = [("t", base.t()), ("c", z.conj())]
    write_tensors(store.objects, tensors)
    _, same = write_tensors(store.objects, tensors)
    assert same.bytes_reused == same.bytes_total
    base[3, 4] = -base[3, 4]
    z[3, 4] = z[3, 4].conj()  # the stored conjugate changes sign in one imaginary part
    _, changed = write_tensors(store.objects, tensors)
    assert changed.bytes_reused == 0 and changed.bytes_new == same.bytes_total


def test_forgetting_one_ledger_keeps_the_others(tmp_path: Any) -> None:
    one, two = Store.init(tmp_path / "one"), Store.init(tmp_path / "two")
    t = torch.randn(N)
    for st in (one, two):
        write_tensors(st.objects, [("t", t)])
    ckpt_reuse.forget(one.objects)
    _, in_one = write_tensors(one.objects, [("t", t)])
    _, in_two = write_tensors(two.objects, [("t", t)])
    assert in_one.bytes_reused == 0 and in_two.bytes_reused == N * 4


def test_chunks_beyond_the_budget_are_hashed(store: Store, monkeypatch: Any) -> None:
    # The budget is the process's: mappings an earlier test in this worker left count in it.
    ckpt_reuse.forget()
    monkeypatch.setattr(ckpt_reuse, "BUDGET", N * 4)  # room for one chunk
    tensors = [("a", torch.randn(N)), ("b", torch.randn(N))]
    write_tensors(store.objects, tensors)
    _, stats = write_tensors(store.objects, tensors)
    assert stats.bytes_reused == N * 4 and stats.bytes_new == 0


def test_the_budget_counts_every_mapped_chunk(store: Store, monkeypatch: Any) -> None:
    ckpt_reuse.forget()
    monkeypatch.setattr(ckpt_reuse, "BUDGET", 2 * N * 4)  # room for two chunks of three
    tensors = [(k, torch.randn(N)) for k in "abc"]
    write_tensors(store.objects, tensors)
    _, stats = write_tensors(store.objects, tensors)
    assert stats.bytes_reused == 2 * N * 4 and stats.bytes_new == 0


def test_a_replaced_mapping_is_closed(store: Store) -> None:
    """The mapping of a chunk's earlier object is closed (on the unmapping thread) once a
    save maps the new one: kept, every save of a changing tensor would map 4 MiB more."""
    import time

    t = torch.randn(N)
    write_tensors(store.objects, [("t", t)])
    first = ckpt_reuse._maps[str(store.objects.root)][("t", 0)]
    t.add_(1.0)
    write_tensors(store.objects, [("t", t)])
    assert ckpt_reuse._maps[str(store.objects.root)][("t", 0)] is not first
    deadline = time.monotonic() + 10
    while not first.mm.closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert first.mm.closed


def test_a_reused_object_is_touched_for_gc(store: Store) -> None:
    """Reusing an object counts as writing it: its mtime is set to now (gc keeps objects
    younger than its grace period, and those touched since a live run began), or a gc
    running before the checkpoint is published could take a chunk the new manifest needs."""
    import time

    t = torch.randn(N)
    entries, _ = write_tensors(store.objects, [("t", t)])
    path = store.objects.path_of(entries[0].chunks[0])
    os.utime(path, (1_000_000, 1_000_000))  # as if stored long ago
    before = time.time()
    again, stats = write_tensors(store.objects, [("t", t)])
    assert again[0].chunks == entries[0].chunks
    assert stats.bytes_reused == N * 4  # compared, not hashed: the reuse path
    assert path.stat().st_mtime >= before - 1


def _resident(addr: int) -> int:
    """Bytes of the mapping that holds ``addr`` in this process's page tables (smaps' Rss)."""
    with open("/proc/self/smaps") as f:
        inside = False
        for line in f:
            head = line.split()[0]
            if not head.endswith(":"):  # a mapping's first line: start-end perms ...
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= addr < hi
            elif inside and head == "Rss:":
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no mapping holds {addr:#x}")


@pytest.mark.skipif(
    not os.path.exists("/proc/self/smaps") or not hasattr(mmap, "MAP_POPULATE"),
    reason="needs Linux's MAP_POPULATE and /proc/self/smaps",
)
def test_a_changed_chunk_is_mapped_with_its_pages_in_place_where_the_last_ones_were(
    store: Store,
) -> None:
    """A chunk that changed after a save found it unchanged replaces a mapping whose pages
    were resident: its new one is mapped with them in place, so the next comparison takes no
    page faults (a save after one that replaced every tensor took 500 of them comparing 180
    MB) and RSS stays as it was. A first save maps lazily (it adds no RSS until the next save
    compares), and so does a change that replaces a mapping never compared, or a chunk
    written around the page cache (changed at two saves in a row: filling its mapping would
    read it from the disk)."""
    t = torch.randn(N)

    def mapping() -> Any:
        return ckpt_reuse._maps[str(store.objects.root)][("t", 0)]

    write_tensors(store.objects, [("t", t)])  # saved for the first time
    assert _resident(mapping().addr) == 0
    t.add_(1.0)
    write_tensors(store.objects, [("t", t)])  # changed: the mapping it replaces had no pages
    assert _resident(mapping().addr) == 0
    write_tensors(store.objects, [("t", t)])  # unchanged: compared, every page read
    assert _resident(mapping().addr) >= N * 4
    t.add_(1.0)
    write_tensors(store.objects, [("t", t)])  # changed after a save found it unchanged
    assert _resident(mapping().addr) >= N * 4
    t.add_(1.0)
    write_tensors(store.objects, [("t", t)])  # changed twice in a row: around the cache
    assert _resident(mapping().addr) == 0
