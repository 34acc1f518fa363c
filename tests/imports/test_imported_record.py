"""The run record's schema-2 rules for imported runs (docs/format.md, "Records")."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from ledger.errors import FormatVersionError
from ledger.records.base import record_from_json
from ledger.records.run import Imported, Run

OID = "b3:" + "a" * 64
ORIGIN = Imported(
    source="mlflow",
    tracking_uri="file:///m/mlruns",
    experiment_id="1",
    experiment="e",
    run_id="0b5619de7d8442cf8e54a381d0676186",
    status="FINISHED",
)


def _fields(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "run_id": "20261130T000000.000000Z-0b5619de",
        "status": "succeeded",
        "started": datetime(2026, 11, 30, tzinfo=UTC),
        "host": "h",
        "pid": 1,
        "contract": OID,
        "contract_digest": OID,
        "ledger_version": "0",
    }
    return base | over


def test_a_recorded_run_stays_schema_1_without_an_imported_key() -> None:
    run = Run(**_fields())
    data = run.to_json()
    assert data["schema"] == 1 and "imported" not in data
    assert b"imported" not in run.canonical()
    assert record_from_json(data, Run) == run


def test_an_imported_run_is_schema_2_without_a_contract() -> None:
    run = Run(**_fields(contract=None, contract_digest=None, imported=ORIGIN, schema=2))
    data = run.to_json()
    assert data["schema"] == 2 and data["contract"] is None
    assert data["imported"]["run_id"] == ORIGIN.run_id
    assert record_from_json(data, Run) == run


@pytest.mark.parametrize(
    "over",
    [
        {"contract": None, "contract_digest": None},  # no contract and not imported
        {"contract": None, "contract_digest": None, "imported": ORIGIN},  # imported as schema 1
    ],
)
def test_inconsistent_records_are_refused(over: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Run(**_fields(**over))


def test_a_newer_run_schema_is_refused() -> None:
    data = Run(**_fields()).to_json() | {"schema": 3}
    with pytest.raises(FormatVersionError):
        record_from_json(data, Run)
