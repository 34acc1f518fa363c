"""The public API is explicit: everything in __all__ exists, nothing private leaks in."""

from __future__ import annotations

import ledger


def test_all_names_exist_and_are_public() -> None:
    for name in ledger.__all__:
        assert hasattr(ledger, name), name
        assert not name.startswith("_") or name == "__version__"


def test_no_undeclared_public_names() -> None:
    import types

    public = {
        n
        for n, v in vars(ledger).items()
        if not n.startswith("_") and not isinstance(v, types.ModuleType)
    }
    assert public <= set(ledger.__all__) | {"annotations"}, public - set(ledger.__all__)
