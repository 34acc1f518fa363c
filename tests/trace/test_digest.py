"""The digests a trace stores are exact: any change of any bit changes them, on the CPU
(BLAKE3 of the bytes) and in the device encoding (weighted integer sums), which is checked
here on CPU tensors by forcing it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from ledger.torch.digest import as_int64, device_sums, digest_value, weights  # noqa: E402

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.uint8]


def _flip(t: torch.Tensor, index: int, bit: int) -> torch.Tensor:
    raw = t.clone().reshape(-1).view(torch.uint8)
    raw[index * t.element_size() + bit // 8] ^= 1 << (bit % 8)
    return raw.view(t.dtype).reshape(t.shape)


@pytest.mark.parametrize("on_device", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_single_bit_flip_changes_the_digest(dtype: torch.dtype, on_device: bool) -> None:
    g = torch.Generator().manual_seed(0)
    t = (torch.randn(3, 5, generator=g) * 50).to(dtype)
    base = digest_value(t, on_device=on_device)
    assert digest_value(t.clone(), on_device=on_device) == base
    bits = t.element_size() * 8
    seen = {base}
    for index in (0, 7, t.numel() - 1):
        for bit in range(bits):
            d = digest_value(_flip(t, index, bit), on_device=on_device)
            assert d != base, (index, bit)
            seen.add(d)
    assert len(seen) == 1 + 3 * bits  # and no two flips collide


@pytest.mark.parametrize("on_device", [False, True])
def test_order_dtype_shape_and_signed_zero_count(on_device: bool) -> None:
    t = torch.arange(12, dtype=torch.float32)
    d = digest_value(t, on_device=on_device)
    assert digest_value(t.flip(0), on_device=on_device) != d  # a permutation (a bit sum misses it)
    assert digest_value(t.reshape(3, 4), on_device=on_device) != d
    assert digest_value(t.double(), on_device=on_device) != d
    z = torch.zeros(4)
    assert digest_value(z, on_device=on_device) != digest_value(-z, on_device=on_device)


def test_a_view_digests_as_its_copy_and_strides_do_not_count() -> None:
    t = torch.randn(6, 4)
    assert digest_value(t.T) == digest_value(t.T.contiguous())
    assert digest_value(t[::2]) == digest_value(t[::2].clone())


def test_the_device_sums_do_not_depend_on_the_order_of_addition() -> None:
    """Integer sums wrap mod 2^64 and are associative: any reduction order gives the same."""
    t = torch.randn(10_000)
    whole = device_sums(t)
    x = as_int64(t)
    for w, expected in zip(weights(x.numel(), x.device), whole.tolist(), strict=True):
        products = x * w
        total = torch.zeros((), dtype=torch.int64)
        for start in reversed(range(0, x.numel(), 997)):  # another order, in pieces
            total += products[start : start + 997].sum()
        assert int(total) == expected
