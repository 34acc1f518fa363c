"""Integrity checks that a mutation spot-check found untested (issue #18).

Each test here fails when the check it names is disabled: the read-time BLAKE3 check on raw
objects and small JSON records, the log's previous-hash link, verify's ``bad-ref`` kind and
the exit code 5 that corrupt data maps to.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

from ledger.errors import CorruptObjectError, IntegrityError
from ledger.store import Store
from ledger.store.log import HashLog
from ledger.store.objects import CODEC_RAW
from ledger.store.verify import verify_store


def _flip(path: Path, at: int, mask: int = 0x01) -> None:
    """Flip bits of one stored byte of an object file (past its codec byte)."""
    path.chmod(0o644)
    raw = bytearray(path.read_bytes())
    raw[at] ^= mask
    path.write_bytes(bytes(raw))


def test_a_flipped_byte_in_a_raw_object_is_refused_on_read(store: Store) -> None:
    data = bytes(range(256)) * 8
    oid = store.objects.put_bytes(data, compress=False)
    path = store.objects.path_of(oid)
    assert path.read_bytes()[0] == CODEC_RAW
    _flip(path, 1000)
    with pytest.raises(CorruptObjectError, match="does not hash to its id"):
        store.objects.get_bytes(oid)
    with pytest.raises(CorruptObjectError):
        store.objects.verify(oid)
    # The unverified read is the documented escape hatch and returns the damaged bytes.
    assert store.objects.get_bytes(oid, verify=False) != data


def test_a_small_json_record_with_a_changed_digit_is_refused(store: Store) -> None:
    """A record under 64 bytes is stored raw: the hash is the only thing that sees a change."""
    oid = store.put_json({"kind": "note", "schema": 1, "loss": 0.25})
    path = store.objects.path_of(oid)
    raw = path.read_bytes()
    assert raw[0] == CODEC_RAW
    at = raw.index(b"0.25") + 3  # 0.25 -> 0.24: still valid JSON, now a different number
    _flip(path, at, ord("5") ^ ord("4"))
    assert b"0.24" in path.read_bytes()
    with pytest.raises(CorruptObjectError, match="does not hash to its id"):
        store.get_json(oid)


def test_cat_of_a_corrupt_raw_object_exits_5(cli, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / ".ledger"
    monkeypatch.setenv("LEDGER_DIR", str(root))
    assert cli("init").exit_code == 0
    store = Store.open(root)
    oid = store.objects.put_bytes(b"short raw object\n")
    _flip(store.objects.path_of(oid), 3)
    r = cli("cat", oid)
    assert r.exit_code == 5, (r.stdout, r.stderr)
    assert "ledger: error:" in r.stderr and oid in r.stderr
    assert "Traceback" not in r.stderr
    assert r.stdout == ""


def test_an_edited_record_reached_through_a_ref_exits_5(
    cli,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A tampered record reached through a ref, not named by id: the read path must check."""
    root = tmp_path / ".ledger"
    monkeypatch.setenv("LEDGER_DIR", str(root))
    assert cli("init").exit_code == 0
    store = Store.open(root)
    oid = store.put_json({"kind": "note", "schema": 1, "n": 7})
    store.set_ref("notes/seven", oid)
    path = store.objects.path_of(oid)
    _flip(path, path.read_bytes().index(b"7"), ord("7") ^ ord("8"))
    with pytest.raises(CorruptObjectError):
        store.get_json(store.refs.get("notes/seven") or "")
    r = cli("cat", "notes/seven")
    assert r.exit_code == 5 and "Traceback" not in r.stderr


def _chain(store: Store, n: int = 4) -> None:
    for i in range(n):
        store.set_ref(
            f"runs/r{i}", store.put_json({"kind": "note", "schema": 1, "i": i}), op="seal"
        )


def test_an_entry_rewritten_with_its_seq_and_prev_kept_breaks_the_next_link(store: Store) -> None:
    """Only the previous-hash check sees this: the edited line keeps its seq and prev."""
    _chain(store)
    lines = store.log.path.read_bytes().splitlines(keepends=True)
    entry = json.loads(lines[1])
    entry["name"] = "runs/forged"
    lines[1] = json.dumps(entry, sort_keys=True, separators=(",", ":")).encode() + b"\n"
    store.log.path.write_bytes(b"".join(lines))
    problems, _ = store.log.check()
    assert [p.line for p in problems] == [3], problems
    assert "chain broken" in problems[0].message
    kinds = [(p.kind, p.subject) for p in verify_store(store).problems if p.kind == "log-chain"]
    assert kinds == [("log-chain", "log line 3")]


def test_an_intact_chain_reports_nothing_and_returns_its_head(store: Store) -> None:
    _chain(store)
    problems, head = store.log.check()
    assert problems == []
    assert head is not None and head.seq == 3
    assert head == store.log.head()


def test_a_first_entry_with_a_prev_is_reported(store: Store) -> None:
    """The chain starts at null: a log cut at the front and re-numbered still shows."""
    _chain(store)
    lines = store.log.path.read_bytes().splitlines(keepends=True)[1:]
    renumbered = []
    for i, line in enumerate(lines):
        entry = json.loads(line)
        entry["seq"] = i
        renumbered.append(json.dumps(entry, sort_keys=True, separators=(",", ":")).encode())
    store.log.path.write_bytes(b"\n".join(renumbered) + b"\n")
    problems, _ = store.log.check()
    assert problems and problems[0].line == 1 and "chain broken" in problems[0].message


@pytest.mark.parametrize(
    "content", [b"not an id\n", b"b3:" + b"0" * 63 + b"\n", b"\n", b"\xff\xfe binary\n"]
)
def test_verify_reports_a_ref_that_holds_no_object_id_as_bad_ref(
    store: Store, content: bytes
) -> None:
    _chain(store, 2)
    ref = store.refs.path_of("runs/r1")
    ref.write_bytes(content)
    report = verify_store(store)
    bad = [p for p in report.problems if p.kind == "bad-ref"]
    assert [p.subject for p in bad] == ["runs/r1"], report.problems
    assert "not an object id" in bad[0].message


def test_verify_cli_lists_a_bad_ref_and_exits_1(cli, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / ".ledger"
    monkeypatch.setenv("LEDGER_DIR", str(root))
    assert cli("init").exit_code == 0
    store = Store.open(root)
    _chain(store, 2)
    store.refs.path_of("runs/r0").write_bytes(b"garbage\n")
    r = cli("verify", "--json")
    assert r.exit_code == 1
    data = json.loads(r.stdout)
    assert not data["ok"]
    assert any(p["kind"] == "bad-ref" and p["subject"] == "runs/r0" for p in data["problems"])


@pytest.mark.parametrize("last", [b"garbage", b"[1, 2]", b'{"no": "seq"}', b"\xff\xfe"])
def test_a_damaged_last_log_entry_stops_writes_with_exit_5(store: Store, last: bytes) -> None:
    """Appending after an unreadable entry would chain new history onto damage: refuse."""
    _chain(store, 2)
    store.log.path.write_bytes(store.log.path.read_bytes() + last + b"\n")
    before = store.log.path.read_bytes()
    oid = store.put_json({"kind": "note", "schema": 1, "i": 9})
    with pytest.raises(IntegrityError, match="last entry of the log") as caught:
        store.set_ref("runs/r9", oid, op="seal")
    assert caught.value.exit_code == 5 and caught.value.hint and "verify" in caught.value.hint
    assert store.log.path.read_bytes() == before
    assert store.refs.get("runs/r9") is None
    assert any(p.kind == "log-chain" for p in verify_store(store).problems)


def test_record_into_a_ledger_with_a_damaged_log_exits_5(tmp_path: Path) -> None:
    init_ledger(tmp_path)
    log = tmp_path / ".ledger" / "log" / "chain.jsonl"
    log.parent.mkdir(exist_ok=True)
    log.write_bytes((log.read_bytes() if log.exists() else b"") + b"garbage\n")
    r = run_ledger("record", "--", sys.executable, "-c", "print(1)", cwd=tmp_path)
    assert r.returncode == 5, r.stderr
    assert "ledger: error:" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "line", [b"[1, 2]", b'"text"', b"null", b'{"seq": "one"}', b'{"seq": true}', b"\xff"]
)
def test_verify_reports_a_log_line_of_the_wrong_shape(store: Store, line: bytes) -> None:
    """Valid JSON that is not an entry, or an entry with a non-integer seq: reported, no crash."""
    _chain(store, 3)
    lines = store.log.path.read_bytes().splitlines(keepends=True)
    lines[1] = line + b"\n"
    store.log.path.write_bytes(b"".join(lines))
    report = verify_store(store)
    chain = [p for p in report.problems if p.kind == "log-chain"]
    assert chain and chain[0].subject == "log line 2", report.problems
    assert report.log_entries == 3
    shape_ok = line.startswith(b"{")
    expected = "log seq is" if shape_ok else "log line is not valid JSON"
    assert chain[0].message.startswith(expected), chain
    # An entry without a usable seq is listed with seq -1, never with whatever the line held.
    assert [e.seq for e in store.log.entries()] == [0, -1, 2]


def test_a_wrong_seq_is_reported_with_the_one_expected(store: Store) -> None:
    _chain(store, 3)
    lines = store.log.path.read_bytes().splitlines(keepends=True)
    entry = json.loads(lines[1])
    entry["seq"] = 7
    lines[1] = json.dumps(entry, sort_keys=True, separators=(",", ":")).encode() + b"\n"
    store.log.path.write_bytes(b"".join(lines))
    problems, _ = store.log.check()
    assert problems[0].line == 2 and problems[0].message == "log seq is 7, expected 1"


def test_the_head_is_found_from_the_end_whatever_the_line_lengths(tmp_path: Path) -> None:
    """``head`` reads the log backwards in 4 KiB blocks: lines shorter, longer than a block and
    straddling block edges all give the true last entry, so every append chains correctly."""
    log = HashLog(tmp_path / "chain.jsonl")
    sizes = [0, 10, 4000, 4096, 4097, 9000, 1, 8191, 0, 12_288, 3]
    for i, n in enumerate(sizes):
        entry = log.append(i=i, pad="x" * n)
        head = log.head()
        assert head is not None and head == entry
        assert head.data["i"] == i and head.seq == i
    assert log.check() == ([], log.head())
    assert log.path.stat().st_size > 3 * 4096


def test_head_of_a_log_holding_only_a_torn_append_is_empty(tmp_path: Path) -> None:
    log = HashLog(tmp_path / "chain.jsonl")
    log.path.write_bytes(b'{"seq":0,"pad":"' + b"x" * 5000)
    assert log.head() is None
    entry = log.append(i=0)
    assert entry.seq == 0 and entry.data["prev"] is None
    assert log.check() == ([], entry)


@pytest.mark.parametrize("size", [4095, 4096, 4097, 8191, 8192, 8193])
def test_head_of_a_one_entry_log_at_every_block_edge(tmp_path: Path, size: int) -> None:
    """The first entry must be found when the file's size sits on, before or after a block edge."""
    probe = HashLog(tmp_path / "probe.jsonl")
    probe.append(i=0, pad="")
    overhead = probe.path.stat().st_size
    log = HashLog(tmp_path / "chain.jsonl")
    entry = log.append(i=0, pad="x" * (size - overhead))
    assert log.path.stat().st_size == size
    assert log.head() == entry
    assert log.append(i=1).data["prev"] == entry.hash


def test_an_empty_log_file_is_an_empty_chain_and_one_stray_byte_is_a_torn_append(
    tmp_path: Path,
) -> None:
    log = HashLog(tmp_path / "chain.jsonl")
    log.path.write_bytes(b"")
    assert log.check() == ([], None) and log.head() is None
    log.path.write_bytes(b"{")
    problems, head = log.check()
    assert head is None and [p.line for p in problems] == [-1]
    assert "incomplete entry" in problems[0].message
    entry = log.append(i=0)
    assert log.path.read_bytes().count(b"\n") == 1 and log.check() == ([], entry)


@pytest.mark.parametrize("content", [b"\n", b"\n\n", b"{}\n"])
def test_a_log_of_only_damaged_lines_is_not_restarted(tmp_path: Path, content: bytes) -> None:
    """A log whose only lines are damaged is not an empty log: a new chain must not start."""
    log = HashLog(tmp_path / "chain.jsonl")
    log.path.write_bytes(content)
    with pytest.raises(IntegrityError):
        log.append(i=0)
    assert log.path.read_bytes() == content
    problems, _ = log.check()
    assert problems and problems[0].line == 1


def test_ref_listing_skips_temp_files_and_filters_by_prefix(store: Store) -> None:
    """A crashed ref write leaves a dot-named temp file: it is not a ref, and verify agrees."""
    _chain(store, 2)
    oid = store.refs.get("runs/r0")
    store.set_ref("verdicts/r0/v1", oid or "", op="verdict")
    (store.refs.root / "runs" / ".tmp-crashed").write_text("half")
    (store.refs.root / "runs" / "empty-dir").mkdir()
    assert [n for n, _ in store.refs.iter()] == ["runs/r0", "runs/r1", "verdicts/r0/v1"]
    assert [n for n, _ in store.refs.iter("verdicts/")] == ["verdicts/r0/v1"]
    assert dict(store.refs.iter("runs/"))["runs/r1"] == store.refs.get("runs/r1")
    assert verify_store(store).ok


def test_a_zstd_object_with_a_damaged_frame_is_reported_as_not_decompressing(
    store: Store,
) -> None:
    oid = store.objects.put_bytes(b"compressible " * 200)
    path = store.objects.path_of(oid)
    assert path.read_bytes()[:1] == b"\x01"
    _flip(path, 1, 0xFF)  # the frame's magic number
    for read in (store.objects.verify, store.objects.get_bytes):
        with pytest.raises(CorruptObjectError, match="does not decompress"):
            read(oid)
