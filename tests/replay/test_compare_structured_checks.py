"""JSON, JSON Lines and YAML edges: parsing, paths, structure and the names overrides match.

Written against the survivors of mutation testing (scripts/mutation.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.replay.compare import CompareSettings, ToleranceSpec, comparator_for, compare_files
from ledger.replay.compare._common import NotComparable
from ledger.replay.compare.structured import load_structured

TOLERANCE = CompareSettings(mode="tolerance")


def _pair(tmp_path: Path, name: str, a: str, b: str) -> tuple[Path, Path]:
    (tmp_path / "a").mkdir(exist_ok=True)
    (tmp_path / "b").mkdir(exist_ok=True)
    pa, pb = tmp_path / "a" / name, tmp_path / "b" / name
    pa.write_text(a)
    pb.write_text(b)
    return pa, pb


@pytest.mark.parametrize("name", ["M.JSON", "x.Jsonl", "x.NDJSON", "c.YAML", "c.yml"])
def test_structured_names_whatever_their_case(name: str) -> None:
    assert comparator_for(name).name == "structured"


def test_each_suffix_picks_its_parser(tmp_path: Path) -> None:
    (tmp_path / "m.NDJSON").write_text('{"a": 1}\n\n  \n{"a": 2}\n')
    assert load_structured(tmp_path / "m.NDJSON") == [{"a": 1}, {"a": 2}]
    (tmp_path / "m.JSONL").write_text('[1]\n{"b": null}\n')
    assert load_structured(tmp_path / "m.JSONL") == [[1], {"b": None}]
    (tmp_path / "c.YML").write_text("a: [1, 2]\n")
    assert load_structured(tmp_path / "c.YML") == {"a": [1, 2]}
    (tmp_path / "m.JSON").write_text('{"a": 1}')
    assert load_structured(tmp_path / "m.JSON") == {"a": 1}
    (tmp_path / "two.json").write_text('{"a": 1}\n{"a": 2}\n')
    with pytest.raises(NotComparable, match=r"cannot parse two\.json as JSON: Extra data"):
        load_structured(tmp_path / "two.json")
    (tmp_path / "m.jsonl").write_text('{"a": 1}\n{"a": \n')
    with pytest.raises(NotComparable, match=r"cannot parse m\.jsonl as JSON Lines"):
        load_structured(tmp_path / "m.jsonl")


def test_yaml_documents(tmp_path: Path) -> None:
    (tmp_path / "one.yaml").write_text("a: 1\n")
    assert load_structured(tmp_path / "one.yaml") == {"a": 1}
    (tmp_path / "two.yaml").write_text("a: 1\n---\nb: 2\n")
    assert load_structured(tmp_path / "two.yaml") == [{"a": 1}, {"b": 2}]
    (tmp_path / "none.yaml").write_text("")
    assert load_structured(tmp_path / "none.yaml") == []


def test_a_parse_error_names_only_its_first_line(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("a: [1, 2\nb: 3\n")
    with pytest.raises(NotComparable) as info:
        load_structured(tmp_path / "c.yaml")
    assert info.value.reason.startswith("cannot parse c.yaml as YAML: ")
    assert "\n" not in info.value.reason
    # a control character: the YAML reader's message has two lines, the second its position
    (tmp_path / "bel.yaml").write_bytes(b"a: 1\x07\n")
    with pytest.raises(NotComparable) as bel:
        load_structured(tmp_path / "bel.yaml")
    assert bel.value.reason == (
        "cannot parse bel.yaml as YAML: unacceptable character #x0007: control characters are "
        "not allowed"
    )
    (tmp_path / "bad.json").write_bytes(b'{"a": "\xff"}')
    with pytest.raises(NotComparable, match=r"cannot parse bad\.json as JSON: .utf-8. codec"):
        load_structured(tmp_path / "bad.json")


def test_yaml_integer_keys_and_top_level_lists_are_indexed(tmp_path: Path) -> None:
    a, b = _pair(
        tmp_path, "c.yaml", "layers:\n  1: 0.5\n  2: 0.7\n", "layers:\n  1: 0.5\n  2: 0.8\n"
    )
    diff = compare_files(a, b, TOLERANCE).first_difference
    assert diff is not None
    assert diff.key == "layers[2]"
    c, d = _pair(tmp_path, "m.json", "[1, [2, 3]]", "[1, [2, 4]]")
    nested = compare_files(c, d, TOLERANCE).first_difference
    assert nested is not None
    assert nested.key == "[1][1]"
    e, f = _pair(tmp_path, "k.json", '{"_a-1": {"b": 1}}', '{"_a-1": {"b": 2}}')
    ident = compare_files(e, f, TOLERANCE).first_difference
    assert ident is not None
    assert ident.key == "_a-1.b"
    g, h = _pair(tmp_path, "q.json", '{"1a": 1}', '{"1a": 2}')
    quoted = compare_files(g, h, TOLERANCE).first_difference
    assert quoted is not None
    assert quoted.key == '["1a"]'


def test_a_scalar_document_is_the_root(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "v.json", "1.5", "2.5")
    result = compare_files(a, b, TOLERANCE)
    assert (result.status, result.mismatches, result.total) == ("different", 1, 1)
    assert result.first_difference is not None
    assert result.first_difference.key == "(root)"
    loose = CompareSettings(overrides={"(root)": ToleranceSpec(rtol=1.0, atol=0.0)})
    assert compare_files(a, b, loose).status == "close"


def test_list_items_are_known_by_their_list_s_name(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.json", '{"loss": [1.0, 2.0]}', '{"loss": [1.0, 2.1]}')
    loose = CompareSettings(overrides={"loss": ToleranceSpec(rtol=0.1, atol=0.0)})
    assert compare_files(a, b, loose).status == "close"
    assert compare_files(a, b, TOLERANCE).status == "different"
    c, d = _pair(tmp_path, "n.json", "[1.0, 2.0]", "[1.0, 2.1]")
    assert (
        compare_files(
            c, d, CompareSettings(overrides={"": ToleranceSpec(rtol=0.1, atol=0.0)})
        ).status
        == "different"
    )


def test_extra_items_in_either_list_are_structural(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.json", '{"x": [1, 2, 3]}', '{"x": [1]}')
    shorter = compare_files(a, b, TOLERANCE)
    assert (shorter.mismatches, shorter.total) == (2, 3)
    assert shorter.first_difference is not None
    assert (
        shorter.first_difference.description == "x[1] is in the original but missing in the replay"
    )
    longer = compare_files(b, a, TOLERANCE)
    assert longer.first_difference is not None
    assert (
        longer.first_difference.description == "x[1] is in the replay but missing in the original"
    )
    same = compare_files(a, a.parent / "m.json", TOLERANCE)
    assert same.status == "identical"


def test_keys_only_in_the_replay_are_structural(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.json", '{"a": 1}', '{"a": 1, "b": {"c": 2}}')
    result = compare_files(a, b, TOLERANCE)
    assert (result.status, result.mismatches, result.total) == ("different", 1, 2)
    assert result.first_difference is not None
    assert result.first_difference.description == "b is in the replay but missing in the original"


def test_a_dict_against_a_list_is_a_type_difference(tmp_path: Path) -> None:
    a, b = _pair(tmp_path, "m.json", '{"x": {"a": 1}}', '{"x": [1]}')
    result = compare_files(a, b, TOLERANCE)
    assert (result.mismatches, result.total) == (1, 1)
    assert result.first_difference is not None
    assert (result.first_difference.kind, result.first_difference.key) == ("type", "x")
