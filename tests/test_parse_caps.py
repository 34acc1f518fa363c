"""``ledger._parse``: the one loader for YAML, JSON and TOML from outside, with caps.

Plain documents read exactly as PyYAML's safe loader and the standard parsers read them;
hostile ones (aliases repeating aliases, an alias inside its own anchor, nesting thousands deep,
an endless file) are refused with ``LimitError`` or ``ParseError``, never a hang, a
``RecursionError`` or a crash of libyaml's C composer.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger._canonical import parse_json
from ledger._parse import (
    MAX_DEPTH,
    LimitError,
    ParseError,
    load_json,
    load_toml,
    load_yaml,
    load_yaml_documents,
    load_yaml_node,
    read_bounded,
)

LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{k}: &{k} [{', '.join([f'*{p}'] * 9)}]\n" for p, k in zip("abcdefgh", "bcdefghi", strict=True)
)


def nested(n: int, open_: str = "[", close: str = "]") -> str:
    return open_ * n + close * n


def test_a_billion_laughs_is_refused_by_counting_what_aliases_repeat() -> None:
    with pytest.raises(LimitError, match="expands to more than 1000000 nodes") as info:
        load_yaml(LAUGHS)
    assert info.value.line is not None  # the alias that crossed the cap
    with pytest.raises(LimitError, match="expands to more than 1000 nodes"):
        load_yaml(
            "a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\nb: " + "[" + ", ".join(["*a"] * 99) + "]",
            max_nodes=1000,
        )


def test_an_alias_inside_its_own_anchor_is_refused() -> None:
    with pytest.raises(ParseError, match=r"alias \*c is inside its own anchor"):
        load_yaml("claims: &c [*c]\n")
    with pytest.raises(ParseError, match=r"alias \*nope is never defined"):
        load_yaml("x: *nope\n")


@pytest.mark.parametrize("style", ["flow-list", "flow-map", "block"])
def test_deep_yaml_is_refused_at_the_cap_without_recursion(style: str) -> None:
    n = 100_000
    text = {
        "flow-list": nested(n),
        "flow-map": "{a: " * n + "1" + "}" * n,
        "block": "".join(f"{' ' * i}a:\n" for i in range(MAX_DEPTH + 5))
        + " " * (MAX_DEPTH + 5)
        + "1\n",
    }[style]
    with pytest.raises(LimitError, match=f"nested more than {MAX_DEPTH} levels deep"):
        load_yaml(text)
    assert load_yaml(nested(MAX_DEPTH)) is not None  # at the cap: read


def test_deep_yaml_does_not_crash_a_thread_with_a_small_stack() -> None:
    # libyaml's C composer recursed once per level: 100,000 levels overflowed the C stack.
    result: list[object] = []

    def parse() -> None:
        try:
            load_yaml(nested(100_000))
        except LimitError as e:
            result.append(e)

    threading.stack_size(256 * 1024)
    try:
        t = threading.Thread(target=parse)
        t.start()
        t.join()
    finally:
        threading.stack_size(0)
    assert len(result) == 1


CORPUS = [
    "a: 1\nb: [1, 2.5, -3, 0x10, 1e3, .inf, .nan]\nc: {d: null, e: ~, f: true, g: no}\n",
    "base: &b {lr: 0.1, layers: [1, 2]}\nmodel: *b\nother: {<<: *b, lr: 0.2}\n",
    "when: 2020-01-02\nstamp: 2020-01-02T03:04:05Z\ntext: |\n  two\n  lines\nq: 'it''s'\n",
    "- !!str 1\n- !!float 2\n- ? complex\n  : key\n- {? a}\n",
    "",
    "# only a comment\n",
    "plain scalar",
    "x: &x 1\ny: *x\nz: [*x, *x]\n",
]


@pytest.mark.parametrize("text", CORPUS)
def test_plain_documents_read_as_the_safe_loader_reads_them(text: str) -> None:
    want = yaml.safe_load(text)
    got = load_yaml(text)
    assert repr(got) == repr(want)  # nan != nan: compare the text


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_dumped_data_round_trips(value: object) -> None:
    text = yaml.safe_dump(value)
    assert load_yaml(text) == yaml.safe_load(text)
    assert load_json(json.dumps(value)) == json.loads(json.dumps(value))


def test_the_node_comes_with_lines_and_every_document_is_read() -> None:
    node, value = load_yaml_node("a:\n  b: 1\n")
    assert value == {"a": {"b": 1}}
    assert node is not None and node.value[0][1].start_mark.line == 1
    assert load_yaml_node("") == (None, None)
    assert load_yaml_documents("a: 1\n---\nb: 2\n") == [{"a": 1}, {"b": 2}]
    with pytest.raises(ParseError, match="expected a single document") as info:
        load_yaml("a: 1\n---\nb: 2\n")
    assert info.value.where == ":2:1"


def test_syntax_errors_and_python_tags_say_where() -> None:
    with pytest.raises(ParseError) as info:
        load_yaml("a: [1, 2\nb: 3\n")
    assert info.value.line is not None and not isinstance(info.value, LimitError)
    with pytest.raises(ParseError, match="could not determine a constructor"):
        load_yaml("- !!python/object/apply:os.system [echo]\n")


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 900, 100_000])
def test_deep_json_and_toml_are_refused(depth: int) -> None:
    with pytest.raises(LimitError, match="nested more than"):
        load_json(nested(depth))
    with pytest.raises(LimitError, match="nested more than"):
        load_toml("x = " + nested(depth))
    with pytest.raises(LimitError, match="nested more than"):
        load_toml("x = " + "{a = " * depth + "1" + "}" * depth)
    assert load_json(nested(MAX_DEPTH)) is not None
    assert load_json("[" + "[], " * 10_000 + "[]]") is not None  # wide, not deep


def test_stored_json_takes_a_record_s_depth_and_no_more() -> None:
    """Records, manifests, log lines, remote metadata: ``RecursionError`` before."""
    assert parse_json(nested(2 * MAX_DEPTH).encode()) == parse_json(nested(2 * MAX_DEPTH).encode())
    for depth in (2 * MAX_DEPTH + 1, 100_000):
        with pytest.raises(ValueError, match="nested more than 200 levels deep"):
            parse_json(nested(depth).encode())
    with pytest.raises(ValueError, match="NaN"):
        parse_json(b"[NaN]")
    assert load_json("[NaN]") != [0]  # a user file may hold NaN


def test_read_bounded_stops_at_its_cap(tmp_path: Path) -> None:
    with pytest.raises(LimitError, match="larger than 1000 bytes"):
        read_bounded("/dev/zero", 1000)
    f = tmp_path / "f"
    f.write_bytes(b"x" * 1000)
    assert read_bounded(f, 1000) == b"x" * 1000
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as w, contextlib.suppress(BrokenPipeError):
            w.write(b"y" * 5000)

    writer = threading.Thread(target=feed)
    writer.start()
    with pytest.raises(LimitError):
        read_bounded(fifo, 100)
    writer.join()
