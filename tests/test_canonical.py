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


any_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and infinities too: refused
    | st.text()
    | st.builds(object),  # not JSON: refused
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text() | st.integers(), inner, max_size=5)
    ),  # int keys: refused
    max_leaves=25,
)


@given(any_values)
def test_the_one_pass_check_accepts_and_refuses_what_the_walk_with_paths_does(
    value: object,
) -> None:
    from ledger._canonical import _check, _plain

    try:
        _check(value, "")
        walked = True
    except (ValueError, TypeError):
        walked = False
    assert _plain(value) == walked


def test_plain_json_is_checked_without_the_walk_that_names_paths(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A valid value (a shard manifest holds ~1,700: its RNG states) is checked in one pass;
    the recursive walk, which builds a path string per value, runs only to name an error."""
    import ledger._canonical as canonical

    walked: list[str] = []
    real = canonical._check
    monkeypatch.setattr(canonical, "_check", lambda v, path: (walked.append(path), real(v, path)))
    value = {"rng": {"key": list(range(624)), "pos": 3}, "x": [1.5, None, True, "s", (1, 2)]}
    assert canonical_json(value).startswith(b'{"rng":{"key":[0,1,2')
    assert walked == []
    with pytest.raises(ValueError, match=r"non-finite float at \.x\[1\]"):
        canonical_json({"x": [1.5, math.inf]})
    with pytest.raises(TypeError, match=r"non-string key 1 at \.y"):
        canonical_json({"y": {1: 2}})
    assert walked and walked[0] == ""
