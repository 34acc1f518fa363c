"""``ledger.store.anchor``: chain heads written down earlier, and what the log says at one."""

from __future__ import annotations

import json

import pytest

from ledger.errors import UsageError
from ledger.store import Store
from ledger.store.anchor import chain_head, extends, parse_head, refs_at

HEX = "0123456789abcdef" * 4


def _heads(store: Store, n: int) -> list[str]:
    heads = []
    for i in range(n):
        oid = store.put_json({"kind": "note", "schema": 1, "i": i})
        heads.append(store.set_ref(f"notes/r{i}", oid).hash)
    return heads


def test_parse_head_takes_a_full_id_with_or_without_its_prefix() -> None:
    assert parse_head(f"b3:{HEX}") == f"b3:{HEX}"
    assert parse_head(f"  {HEX.upper()}\n") == f"b3:{HEX}"


@pytest.mark.parametrize("text", ["", HEX[:12], f"b3:{HEX[:-1]}", f"sha256:{HEX}", HEX + "0"])
def test_parse_head_refuses_anything_else(text: str) -> None:
    with pytest.raises(UsageError, match="is not a chain head"):
        parse_head(text)


def test_chain_head_is_the_last_lines_id_and_the_line_count(store: Store) -> None:
    assert chain_head(store.log) == (None, 0)
    heads = _heads(store, 3)
    assert chain_head(store.log) == (heads[-1], 3)


def test_every_earlier_head_is_extended_with_its_line(store: Store) -> None:
    heads = _heads(store, 3)
    for seq, head in enumerate(heads):
        check = extends(store.log, head)
        assert check.ok and check.seq == seq
        assert f"(line {seq + 1})" in check.message


def test_a_head_not_in_the_log_is_not_extended(store: Store) -> None:
    _heads(store, 2)
    check = extends(store.log, f"b3:{HEX}")
    assert not check.ok and check.seq is None and "is not in the log" in check.message


def _rewrite(store: Store, edit: object) -> None:
    lines = [json.loads(x) for x in store.log.path.read_bytes().splitlines()]
    edit(lines)  # type: ignore[operator]
    body = b"".join(
        json.dumps(e, sort_keys=True, separators=(",", ":")).encode() + b"\n" for e in lines
    )
    store.log.path.write_bytes(body)


@pytest.mark.parametrize("field", ["prev", "seq"])
def test_a_log_edited_before_the_head_does_not_extend_it(store: Store, field: str) -> None:
    heads = _heads(store, 3)

    def edit(lines: list[dict[str, object]]) -> None:
        lines[1][field] = None if field == "prev" else 7

    _rewrite(store, edit)
    check = extends(store.log, heads[2])
    assert not check.ok and check.seq is None
    assert "broken at line 2" in check.message


def test_a_log_edited_only_after_the_head_still_extends_it(store: Store) -> None:
    heads = _heads(store, 3)

    def edit(lines: list[dict[str, object]]) -> None:
        lines[2]["seq"] = 9

    _rewrite(store, edit)
    assert extends(store.log, heads[1]).ok


def test_refs_at_replays_sets_and_deletes_up_to_the_head(store: Store) -> None:
    heads = _heads(store, 2)
    deleted = store.delete_ref("notes/r0")
    assert deleted is not None
    r1 = store.refs.get("notes/r1")
    r0_at_1 = refs_at(store.log, heads[0])
    assert r0_at_1 is not None and list(r0_at_1) == ["notes/r0"]
    assert refs_at(store.log, heads[1]) == {"notes/r0": r0_at_1["notes/r0"], "notes/r1": r1}
    assert refs_at(store.log, deleted.hash) == {"notes/r1": r1}
    assert refs_at(store.log, f"b3:{HEX}") is None
