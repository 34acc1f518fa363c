"""The public API of ledger.stats is exactly its __all__, and every result is plain JSON."""

from __future__ import annotations

import dataclasses
import importlib
import json
import pkgutil

import ledger.stats as api


def test_all_is_sorted_unique_and_importable() -> None:
    assert len(set(api.__all__)) == len(api.__all__)
    assert sorted(api.__all__, key=lambda n: (not n.isupper(), n)) == api.__all__
    for name in api.__all__:
        assert hasattr(api, name), name


def test_every_submodule_export_is_reexported() -> None:
    for info in pkgutil.iter_modules(api.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"ledger.stats.{info.name}")
        missing = set(module.__all__) - set(api.__all__)
        assert not missing, f"{info.name} exports {missing} but ledger.stats does not"


def test_results_are_frozen_and_serialise_without_nan() -> None:
    result = api.welch_tost([1.0, 2.0, 3.0], [1.0, 2.0, 3.5], margin=1.0)
    assert dataclasses.is_dataclass(result)
    try:
        result.delta = 0.0  # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("results must be frozen")
    json.dumps(result.to_json(), allow_nan=False)
