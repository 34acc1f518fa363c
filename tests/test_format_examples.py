"""The worked examples in docs/format.md are real: recompute them."""

from __future__ import annotations

import re
from pathlib import Path

from ledger._canonical import canonical_json
from ledger._hashing import hash_bytes
from ledger.records import Tree, TreeEntry
from ledger.store import Store

FORMAT = (Path(__file__).resolve().parent.parent / "docs" / "format.md").read_text()


def test_example_ids_in_format_md(tmp_path: Path) -> None:
    empty = hash_bytes(b"")
    hello = hash_bytes(b"hello ledger\n")
    assert f"| empty | `{empty}` |" in FORMAT
    assert f"| `hello ledger\\n` | `{hello}` |" in FORMAT
    tree = Tree(entries=[TreeEntry(path="hello.txt", size=13, oid=hello)], total_size=13)
    text = tree.canonical().decode()
    assert f"```json\n{text}\n```" in FORMAT
    assert f"has the id `{tree.digest()}`" in FORMAT
    store = Store.init(tmp_path / ".ledger")
    oid = store.put_json(tree.to_json())
    assert oid == tree.digest()
    rel = store.objects.path_of(oid).relative_to(store.root).as_posix()
    assert f"`{rel}`" in FORMAT


def test_canonical_example_in_format_md() -> None:
    m = re.search(r"encodes as\n`([^`]+)`", FORMAT)
    assert m is not None
    assert canonical_json({"b": [1.0, -0.0, 1e-07, 2**70], "a": "é"}).decode() == m.group(1)


def test_package_example_in_format_md() -> None:
    from ledger.share.package import package_manifest

    hello = hash_bytes(b"hello ledger\n")
    tree = Tree(entries=[TreeEntry(path="hello.txt", size=13, oid=hello)], total_size=13)
    manifest = package_manifest(
        {"ledger": "00000000-0000-4000-8000-000000000000", "head": None},
        [],
        {"notes/hello": tree.digest()},
        {hello: 13, tree.digest(): len(tree.canonical())},
        b"# Example\n",
        [],
    )
    assert f"```json\n{manifest.decode()}\n```" in FORMAT
    assert f"`objects/b3/{tree.digest()[3:]}` ({len(tree.canonical())} bytes)" in FORMAT
