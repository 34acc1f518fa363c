"""JSON Schema generation for every record kind (the files in ``schemas/``)."""

from __future__ import annotations

import json
from pathlib import Path

from .base import RECORD_TYPES

__all__ = ["render_schemas", "write_schemas"]


def _load_all_kinds() -> None:
    # Import every module that defines records so RECORD_TYPES is complete.
    import importlib
    import pkgutil

    from .. import records

    for mod in pkgutil.iter_modules(records.__path__):
        importlib.import_module(f"{records.__name__}.{mod.name}")


def render_schemas() -> dict[str, str]:
    """File name -> JSON text, for every registered record kind."""
    _load_all_kinds()
    out: dict[str, str] = {}
    for kind, cls in sorted(RECORD_TYPES.items()):
        if not cls.__module__.startswith("ledger."):
            continue  # test-only or plugin records are not part of the format
        schema = cls.model_json_schema(by_alias=True, mode="serialization")
        schema["$id"] = f"https://ledger.invalid/schemas/{kind}.schema.json"
        schema["x-ledger-schema-version"] = cls.SCHEMA
        out[f"{kind}.schema.json"] = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    return out


def write_schemas(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in render_schemas().items():
        path = directory / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
