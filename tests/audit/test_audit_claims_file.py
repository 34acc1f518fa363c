"""Loading claims files: every mistake points at its line and field; one bad claim is isolated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ledger.audit import claims_json_schema, load_claims, parse_claims
from ledger.errors import UsageError

SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "claims.schema.json"

GOOD = """\
paper: P
claims:
  - metric: test/acc
    value: 93.10
    spread: 0.2
    spread_type: std
    n_seeds: 5
    split: test
    runs: {names: [exp]}
"""


def _one(text: str) -> list[tuple[int | None, str, str]]:
    loaded = parse_claims(text.encode(), "c.yaml")
    return [(p.line, p.field, p.message) for p in loaded.problems]


def test_good_claim_gets_defaults_and_inferred_decimals() -> None:
    loaded = parse_claims(GOOD.encode(), "c.yaml")
    (c,) = loaded.claims
    assert c.problems == () and c.claim is not None
    assert c.id == "claim-1" and c.line == 3
    assert c.claim.decimals == 2  # "93.10" as written, not float 93.1
    assert c.claim.source.paper == "P"
    assert c.claim.checkpoint == "final" and c.claim.aggregate == "mean"


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (("    value: 93.10\n", "    value: high\n"), (4, "value", "valid number")),
        (("    n_seeds: 5\n", "    n_seeds: 0\n"), (7, "n_seeds", "greater than or equal to 1")),
        (("    split: test\n", "    split: train\n"), (8, "split", "'val' or 'test'")),
        (
            ("    split: test\n", "    split: test\n    colour: red\n"),
            (9, "colour", "unknown field"),
        ),
        (
            ("- metric: test/acc\n    value", "- value"),
            (3, "metric", "required field 'metric' is missing"),
        ),
        (("    spread_type: std\n", ""), (3, "", "spread is given without spread_type")),
        (("{names: [exp]}", "{}"), (9, "runs", "give at least one of ids, names")),
        (("    value: 93.10\n", "    value: 9.31e1\n"), (3, "decimals", "cannot be read off")),
        (("    n_seeds: 5\n", "    n_seeds: 5\n    n_seeds: 6\n"), (8, "n_seeds", "duplicate key")),
        (("    spread_type: std\n", "    spread_type: sd\n"), (6, "spread_type", "'std'")),
    ],
)
def test_problems_point_at_line_and_field(
    edit: tuple[str, str], expected: tuple[int, str, str]
) -> None:
    text = GOOD.replace(*edit)
    assert text != GOOD
    (problem,) = _one(text)
    line, field, message = expected
    assert problem[:2] == (line, field)
    assert message in problem[2]


def test_one_bad_claim_leaves_the_others_loaded() -> None:
    body = GOOD.split("claims:\n")[1]
    text = "claims:\n" + body + body.replace("value: 93.10", "value: x") + body
    loaded = parse_claims(text.encode(), "c.yaml")
    assert [c.claim is not None for c in loaded.claims] == [True, False, True]
    assert [c.id for c in loaded.claims] == ["claim-1", "claim-2", "claim-3"]
    assert loaded.claims[1].problems[0].line == 10


def test_duplicate_claim_ids_are_reported_on_the_second() -> None:
    body = GOOD.split("claims:\n")[1].replace("  - metric", "  - id: a\n    metric")
    loaded = parse_claims(("claims:\n" + body + body).encode(), "c.yaml")
    assert loaded.claims[0].claim is not None
    assert loaded.claims[1].claim is None
    assert "duplicate claim id 'a'" in loaded.claims[1].problems[0].message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("claims:\n  - metric: [unclosed\n", "c.yaml:3:1: malformed YAML"),
        ("claims: [\n", "malformed YAML"),
        ("- metric: a\n", "must be a mapping with a `claims:` list"),
        ("claims: []\n", "c.yaml:1: `claims` must be a non-empty list"),
        ("paper: x\nclaim:\n  - metric: a\n", "c.yaml:2: unknown top-level key 'claim'"),
        ("version: 2\nclaims:\n  - metric: a\n", "c.yaml:1: unsupported claims file version"),
        ("paper: a\npaper: b\nclaims: [1]\n", "c.yaml:2: duplicate key 'paper' (first at line 1)"),
        ("", "must be a mapping"),
    ],
)
def test_malformed_files_raise_usage_errors_with_a_line(text: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_claims(text.encode(), "c.yaml")
    assert message in info.value.message
    assert info.value.exit_code == 2


def test_unreadable_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read claims file"):
        load_claims(tmp_path / "missing.yaml")
    binary = tmp_path / "b.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(UsageError, match="not UTF-8"):
        load_claims(binary)


_LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{k}: &{k} [{', '.join([f'*{p}'] * 9)}]\n" for p, k in zip("abcdef", "bcdefg", strict=True)
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_LAUGHS + "claims: [*g]\n", "expands to more than 100000 nodes"),
        ("claims: &c [*c]\n", "alias *c is inside its own anchor"),
        ("claims: " + "[" * 3000 + "]" * 3000 + "\n", "nested more than 100 levels deep"),
        (
            "claims:\n- !!python/object/apply:os.system [echo]\n",
            "could not determine a constructor",
        ),
    ],
    ids=["billion-laughs", "self-alias", "deep", "python-tag"],
)
def test_hostile_yaml_is_refused_quickly(text: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_claims(text.encode(), "c.yaml")
    assert message in info.value.message
    assert info.value.exit_code == 2


def test_aliases_for_a_repeated_selector_still_load() -> None:
    text = "methods:\n  a: &s {names: [x]}\n  b: *s\nclaims:\n- {metric: m, value: 1}\n"
    loaded = parse_claims(text.encode(), "c.yaml")
    assert loaded.methods["a"] == loaded.methods["b"]


def test_schema_file_is_up_to_date_and_accepts_the_good_claim() -> None:
    schema = claims_json_schema()
    on_disk = json.loads(SCHEMA.read_text(encoding="utf-8"))
    assert on_disk == schema, "run: python -c 'from ledger.audit import write_claims_schema ...'"
    claim = schema["$defs"]["Claim"]
    assert set(claim["required"]) == {"metric", "runs"}
    assert claim["oneOf"] == [{"required": [k]} for k in ("value", "below", "above")]
    assert set(claim["properties"]["spread_type"]["anyOf"][0]["enum"]) == {
        "std",
        "sem",
        "ci",
        "range",
        "unspecified",
    }


def test_values_written_with_more_than_12_decimals_are_read_at_12() -> None:
    """The inferred digits of `value`/`difference` are capped at the fields' 12: a number with
    14 decimals was refused for `decimals`/`difference_decimals`, fields its author never wrote."""
    text = (
        "methods: {a: {names: [a]}, b: {names: [b]}}\nclaims:\n"
        "- {kind: comparison, metric: m, a: a, b: b, difference: 0.12345678901234}\n"
        "- {metric: m, value: 0.12345678901234, runs: {names: [a]}}\n"
    )
    first, second = parse_claims(text.encode(), "c.yaml").claims
    assert first.problems == () and second.problems == ()
    assert first.claim is not None and first.claim.difference_decimals == 12  # type: ignore[union-attr]
    assert second.claim is not None and second.claim.decimals == 12  # type: ignore[union-attr]


@pytest.mark.parametrize("bounds", ["[0, .inf]", "[-1e308, 1e308]", "[.nan, 1]", "[1, 1]"])
def test_normalize_bounds_must_be_finite_and_ordered(bounds: str) -> None:
    """An infinite range (or high - low overflowing) scaled every score to 0: all tasks tied."""
    text = (
        "methods: {a: {names: [a]}, b: {names: [b]}}\nclaims:\n"
        "- {kind: comparison, metric: m, a: a, b: b, task_tag: game,"
        f" normalize: {{pong: {bounds}}}}}\n"
    )
    (claim,) = parse_claims(text.encode(), "c.yaml").claims
    assert claim.claim is None
    assert any("high must exceed low, both finite" in p.message for p in claim.problems)
