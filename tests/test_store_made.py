"""The list of files ledger wrote outside its folder (``ledger/store/made.py``,
``.ledger/made.jsonl``): it is compacted once it passes 1 MiB, and read only up to 16 MiB."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from ledger.store import Store
from ledger.store.made import MADE_FILE, made_paths, note_made

MIB = 1 << 20


def _ledger(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "proj" / ".ledger"
    Store.init(root)
    report = tmp_path / "proj" / "audit.html"
    report.write_text("<html>audit</html>\n")
    return root, report


def test_a_path_noted_at_every_run_keeps_the_list_near_1_mib(tmp_path: Path) -> None:
    """A path remote pushed to at every run adds a line each time: once the list passes 1 MiB
    it is rewritten with the newest line of each path, so it never grows past 1 MiB and a
    line."""
    root, report = _ledger(tmp_path)
    other = report.with_name("other.html")
    other.write_text("x\n")
    note_made(root, other, "report")
    made = root / MADE_FILE
    line = made.stat().st_size
    sizes = []
    while len(sizes) < 3 * MIB // line:
        note_made(root, report, "report")
        sizes.append(made.stat().st_size)
        if len(sizes) > 1 and sizes[-1] < sizes[-2]:
            break
    assert max(sizes) <= MIB + line
    assert sizes[-1] < sizes[-2], "never compacted"
    lines = made.read_bytes().splitlines()
    assert sorted(json.loads(x)["path"] for x in lines) == sorted([str(other), str(report)])
    assert {m.path for m in made_paths(root)} == {other, report}


def test_a_list_over_16_mib_is_not_read(tmp_path: Path) -> None:
    """A list of 16 MiB is read; one byte more (damaged, or planted) is not: its paths are then
    the project's files again, as for no list at all."""
    root, report = _ledger(tmp_path)
    note_made(root, report, "report")
    made = root / MADE_FILE
    with open(made, "ab") as f:  # padding: a damaged line of spaces names nothing
        f.write(b" " * (16 * MIB - made.stat().st_size - 1) + b"\n")
    assert made.stat().st_size == 16 * MIB
    assert [m.path for m in made_paths(root)] == [report]
    with open(made, "ab") as f:
        f.write(b" ")
    assert made_paths(root) == []
    os.truncate(made, 16 * MIB)
    assert [m.path for m in made_paths(root)] == [report]


def test_each_note_is_one_canonical_line_and_leaves_no_descriptor_open(tmp_path: Path) -> None:
    """The format docs' line: canonical JSON (keys sorted, no spaces); and a writer that notes
    many reports (an audit per run) does not run out of descriptors."""
    root, report = _ledger(tmp_path)
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(50):
        note_made(root, report, "report")
    assert len(os.listdir("/proc/self/fd")) == before
    st = report.stat()
    line = (root / MADE_FILE).read_bytes().splitlines()[0]
    assert (
        line
        == (
            f'{{"kind":"report","mtime_ns":{st.st_mtime_ns},"path":"{report}","size":{st.st_size}}}'
        ).encode()
    )
    made = made_paths(root)[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.kind = "site"  # type: ignore[misc]


def test_lines_that_are_not_notes_are_skipped_without_being_parsed_one_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A list padded up to its 16 MiB read with lines ledger never writes (blank, torn, planted
    braces, a note missing its end) is read on every code capture: each such line handed to the
    JSON parser cost a raised error (16 MiB of blank lines: 52 s of CPU). Only lines of the one
    canonical shape ``note_made`` writes reach the parser; the real notes among them still count,
    the last one per path winning."""
    root, report = _ledger(tmp_path)
    note_made(root, report, "report")
    gone = tmp_path / "gone.html"
    made = root / MADE_FILE
    junk = [b"", b"{", b'{"}', b"{}", b"  ", b'{"kind":"report","path":"x"', b"\x00\xff"]
    with open(made, "ab") as f:
        for i in range(20_000):
            f.write(junk[i % len(junk)] + b"\n")
        # a note of another path, in the canonical shape, for a file that is gone
        f.write(b'{"kind":"report","mtime_ns":1,"path":"' + str(gone).encode() + b'","size":3}\n')
        f.write(b" " * 100 + b"\n")
    parsed: list[bytes] = []
    real_loads = json.loads

    def counting_loads(s: bytes | str, *args: object, **kwargs: object) -> object:
        parsed.append(s if isinstance(s, bytes) else s.encode())
        return real_loads(s, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("ledger.store.made.json.loads", counting_loads)
    assert [m.path for m in made_paths(root)] == [report]
    assert len(parsed) == 2, parsed[:5]
    assert all(p.startswith(b'{"kind":"report","mtime_ns":') for p in parsed)
    gone.write_text("abc")  # its size matches, its mtime does not: still not ledger's
    assert [m.path for m in made_paths(root)] == [report]
