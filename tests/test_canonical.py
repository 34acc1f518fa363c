from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger._canonical import canonical_json, format_datetime, parse_json
from ledger._hashing import hash_bytes
from ledger.records import JsonFloat, Record, Timestamp, record_from_json

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=25,
)


@given(json_values)
def test_canonical_json_is_stable_through_a_round_trip(value: object) -> None:
    first = canonical_json(value)
    assert canonical_json(parse_json(first)) == first
    assert hash_bytes(canonical_json(parse_json(first))) == hash_bytes(first)


@given(st.dictionaries(st.text(), st.integers(), max_size=8))
def test_key_order_does_not_change_the_encoding(d: dict[str, int]) -> None:
    reversed_dict = dict(reversed(list(d.items())))
    assert canonical_json(d) == canonical_json(reversed_dict)


def test_float_and_text_encoding() -> None:
    assert canonical_json({"b": [1.0, -0.0, 1e-07, 2**70], "a": "é"}) == (
        '{"a":"é","b":[1.0,-0.0,1e-07,1180591620717411303424]}'.encode()
    )
    with pytest.raises(ValueError, match="non-finite"):
        canonical_json({"x": math.nan})
    with pytest.raises(TypeError):
        canonical_json({1: 2})
    with pytest.raises(ValueError):
        parse_json(b'{"x": NaN}')


def test_datetimes_are_utc_with_microseconds() -> None:
    t = datetime(2026, 11, 30, 8, 40, tzinfo=timezone(timedelta(hours=2)))
    assert format_datetime(t) == "2026-11-30T06:40:00.000000Z"
    with pytest.raises(ValueError):
        format_datetime(datetime(2026, 1, 1))


class _Sample(Record):
    KIND = "test-sample"
    kind: str = "test-sample"
    when: Timestamp
    x: JsonFloat


def test_records_encode_nonfinite_floats_and_round_trip() -> None:
    rec = _Sample(when=datetime(2026, 1, 1, tzinfo=UTC), x=math.inf)
    data = rec.to_json()
    assert data["x"] == "inf" and data["when"] == "2026-01-01T00:00:00.000000Z"
    back = record_from_json(parse_json(rec.canonical()))
    assert back == rec and back.digest() == rec.digest()


def test_newer_schema_version_is_refused() -> None:
    from ledger.errors import FormatVersionError

    with pytest.raises(FormatVersionError, match="upgrade"):
        record_from_json({"kind": "test-sample", "schema": 99, "when": "x", "x": 1.0})
    with pytest.raises(FormatVersionError, match="unknown record kind"):
        record_from_json({"kind": "no-such-kind", "schema": 1})
