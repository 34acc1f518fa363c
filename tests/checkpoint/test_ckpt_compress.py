"""``save_checkpoint(compress=...)``: which chunks are stored as zstd frames in each mode.

By default only chunks zstd makes at least a third smaller are compressed (zeros, integer ids,
half-zero tensors); float weights, whose exponent bytes give 10-25%, are stored raw. ``True``
takes the store's 10% rule, ``False`` stores everything raw. Every mode loads back bitwise, a
background save follows the same rule, and a bad value is refused before anything is written.
"""

from __future__ import annotations

from typing import Any

import pytest

from ledger.errors import UsageError
from ledger.store import Store

torch = pytest.importorskip("torch")

from ledger.torch.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from ledger.torch.checkpoint import write as ckpt_write  # noqa: E402

pytestmark = pytest.mark.torch

N = 1 << 16  # elements: every tensor is one chunk well over the 64 KiB sample


def _state() -> dict[str, Any]:
    g = torch.Generator().manual_seed(7)
    w = torch.randn(N, generator=g)
    return {
        # float32 weights drifted away from 0: the exponent byte repeats, ~13% smaller
        "drifted": w + 3,
        # bfloat16 weights at an init scale: ~22% smaller
        "bf16": (w * 0.02).to(torch.bfloat16),
        "zeros": torch.zeros(N),
        "ids": torch.randint(0, 50_000, (N,), generator=g),  # int64: ~75% smaller
        # int32 under 2**18: ~28% smaller, between the store's 10% and the default's third
        "ints18": torch.randint(0, 1 << 18, (N,), generator=g, dtype=torch.int32),
        "half_zero": torch.where(w > 0, w, torch.zeros(())),  # ~43% smaller
    }


def _codecs(store: Store, run: str) -> dict[str, bytes]:
    ckpt = store.get_json(store.refs.get(f"checkpoints/{run}/latest") or "")
    shard = store.get_json(ckpt["shards"][0]["manifest"])
    out: dict[str, bytes] = {}
    for e in shard["tensors"]:
        (oid,) = e["chunks"]
        out[e["key"].rsplit("/", 1)[-1]] = store.objects.path_of(oid).read_bytes()[:1]
    return out


def _saving(t: Any) -> float:
    """What zstd at the writer's level saves on the tensor's 64 KiB sample."""
    raw = t.reshape(-1).view(torch.uint8).numpy().tobytes()[: 64 << 10]
    return 1 - len(ckpt_write._compressor().compress(raw)) / len(raw)


def test_the_state_spans_both_thresholds() -> None:
    # The cases below mean what their names say only if these savings hold.
    s = {k: _saving(v) for k, v in _state().items()}
    assert 0.10 <= s["drifted"] < 1 / 3, s
    assert 0.10 <= s["bf16"] < 1 / 3, s
    assert 0.25 < s["ints18"] < 1 / 3, s
    assert s["zeros"] > 0.9 and s["ids"] >= 1 / 3 and s["half_zero"] >= 1 / 3, s


# Raw chunks of 64 KiB or more start on a page (codec 0x02, docs/format.md).
RAW, ZSTD = b"\x02", b"\x01"
# A third smaller or more: compressed by default.
_PACKED = dict.fromkeys(("zeros", "ids", "half_zero"), ZSTD)


@pytest.mark.parametrize(
    ("compress", "expected"),
    [
        (None, {**dict.fromkeys(("drifted", "bf16", "ints18"), RAW), **_PACKED}),
        (True, dict.fromkeys(("drifted", "bf16", "ints18", *_PACKED), ZSTD)),
        (False, dict.fromkeys(("drifted", "bf16", "ints18", *_PACKED), RAW)),
    ],
)
@pytest.mark.parametrize("background", [False, True])
def test_each_mode_compresses_what_it_says_and_loads_back_bitwise(
    store: Store, compress: bool | None, expected: dict[str, bytes], background: bool
) -> None:
    state = _state()
    kw: dict[str, Any] = {} if compress is None else {"compress": compress}
    got = save_checkpoint(
        {"m": state}, step=1, store=store, run_id="r", background=background, **kw
    )
    info = got.wait() if background else got
    assert info.bytes_new == sum(t.numel() * t.element_size() for t in state.values())
    assert _codecs(store, "r") == expected
    loaded = load_checkpoint(store=store, run_id="r").state["m"]
    for key, t in state.items():
        assert loaded[key].dtype == t.dtype
        assert torch.equal(loaded[key].view(torch.uint8), t.view(torch.uint8)), key


def test_a_chunk_stored_raw_by_default_is_reused_by_a_compressing_save(store: Store) -> None:
    # The codec is not part of an object's id: the same bytes saved with compress=True later
    # are found stored (raw) and not written again.
    state = _state()
    save_checkpoint({"m": state}, step=1, store=store, run_id="r")
    again = save_checkpoint({"m": state}, step=2, store=store, run_id="r", compress=True)
    assert again.bytes_new == 0
    assert _codecs(store, "r")["drifted"] == RAW


@pytest.mark.parametrize("bad", ["yes", 1, 0, 0.5])
def test_a_bad_compress_value_is_refused_before_anything_is_written(store: Store, bad: Any) -> None:
    before = sorted(p.name for p in store.objects.root.rglob("*") if p.is_file())
    with pytest.raises(UsageError, match=r"compress must be None, True or False, got"):
        save_checkpoint({"w": torch.zeros(4)}, step=1, store=store, run_id="r", compress=bad)
    assert store.refs.get("checkpoints/r/latest") is None
    assert sorted(p.name for p in store.objects.root.rglob("*") if p.is_file()) == before
